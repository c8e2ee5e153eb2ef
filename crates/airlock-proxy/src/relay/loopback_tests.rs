use super::unpace_if_loopback;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};

fn congestion_control(fd: BorrowedFd<'_>) -> String {
    let mut name = [0u8; 16];
    let mut len = name.len() as libc::socklen_t;
    // SAFETY: `name` is valid for writes of `len` bytes and `len` for a write of its own size;
    // `fd` is open (borrowed).
    let ret = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_CONGESTION,
            name.as_mut_ptr().cast(),
            &mut len,
        )
    };
    assert_eq!(
        ret,
        0,
        "getsockopt TCP_CONGESTION: {}",
        std::io::Error::last_os_error()
    );
    String::from_utf8_lossy(&name[..len as usize])
        .trim_end_matches('\0')
        .to_string()
}

#[test]
fn a_loopback_listener_passes_reno_to_the_connections_it_accepts() {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    unpace_if_loopback(&listener, addr);
    let _client = TcpStream::connect(addr).expect("connect");
    let (accepted, _) = listener.accept().expect("accept");
    assert_eq!(congestion_control(accepted.as_fd()), "reno");
}

#[test]
fn a_socket_for_a_routable_address_keeps_the_host_default() {
    let default =
        std::fs::read_to_string("/proc/sys/net/ipv4/tcp_congestion_control").expect("sysctl");
    let socket = tokio::net::TcpSocket::new_v4().expect("socket");
    let routable: SocketAddr = "192.0.2.1:443".parse().expect("addr");
    unpace_if_loopback(&socket, routable);
    assert_eq!(congestion_control(socket.as_fd()), default.trim());
}
