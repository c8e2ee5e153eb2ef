//! The box's network namespace: bring loopback up (it starts down).

use crate::sys::cvt;
use std::io;

/// Sets `lo` up in the current network namespace.
pub fn loopback_up() -> io::Result<()> {
    // SAFETY: plain socket creation.
    let sock =
        cvt(unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) })?;
    // SAFETY: ifreq is plain old data; all-zero is a valid value.
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    for (dst, src) in req.ifr_name.iter_mut().zip(b"lo\0") {
        *dst = *src as libc::c_char;
    }
    // SAFETY: req is a valid ifreq naming "lo"; the ioctl fills ifru_flags.
    let res = cvt(unsafe { libc::ioctl(sock, libc::SIOCGIFFLAGS, &mut req) }).and_then(|_| {
        // SAFETY: reading/writing the flags member of the union the kernel just filled.
        unsafe { req.ifr_ifru.ifru_flags |= (libc::IFF_UP | libc::IFF_RUNNING) as libc::c_short };
        // SAFETY: req is a valid ifreq with the new flags.
        cvt(unsafe { libc::ioctl(sock, libc::SIOCSIFFLAGS, &req) })
    });
    crate::sys::close(sock);
    res.map(|_| ())
}

/// Creates a TCP listener on 127.0.0.1:`port` in the current network namespace (the box's): the
/// proxy's only door into the box. Returns the listening descriptor (close-on-exec).
pub fn listen_loopback(port: u16) -> io::Result<libc::c_int> {
    // SAFETY: plain socket creation.
    let fd =
        cvt(unsafe { libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0) })?;
    let one: libc::c_int = 1;
    // SAFETY: setting an int option from a valid pointer and size.
    unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_REUSEADDR,
            (&one as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    let addr = libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: port.to_be(),
        sin_addr: libc::in_addr {
            s_addr: u32::from_be_bytes([127, 0, 0, 1]).to_be(),
        },
        sin_zero: [0; 8],
    };
    // SAFETY: addr is a valid sockaddr_in of the size given.
    let bound = cvt(unsafe {
        libc::bind(
            fd,
            (&addr as *const libc::sockaddr_in).cast(),
            std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
        )
    })
    // SAFETY: listen on our socket.
    .and_then(|_| cvt(unsafe { libc::listen(fd, 1024) }));
    if let Err(e) = bound {
        crate::sys::close(fd);
        return Err(e);
    }
    Ok(fd)
}

/// Sends one descriptor over a unix socket (SCM_RIGHTS).
pub fn send_fd(channel: libc::c_int, fd: libc::c_int) -> io::Result<()> {
    send_with_fd(channel, b"L", Some(fd))
}

/// Receives one descriptor sent with [`send_fd`]; `Ok(None)` if the sender closed the channel
/// without sending one. The descriptor is close-on-exec.
pub fn recv_fd(channel: libc::c_int) -> io::Result<Option<libc::c_int>> {
    let mut byte = [0u8; 1];
    recv_with_fd(channel, &mut byte).map(|(_, fd)| fd)
}

/// Sends `payload` (one message on a SEQPACKET socket) with an optional descriptor attached.
pub fn send_with_fd(
    channel: libc::c_int,
    payload: &[u8],
    fd: Option<libc::c_int>,
) -> io::Result<()> {
    send_with_fds(channel, payload, fd.as_slice())
}

/// Sends `payload` (one message on a SEQPACKET socket) with `fds` attached (at most
/// [`MAX_FDS`]).
pub fn send_with_fds(channel: libc::c_int, payload: &[u8], fds: &[libc::c_int]) -> io::Result<()> {
    if fds.len() > MAX_FDS {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "too many descriptors for one message",
        ));
    }
    let mut iov = libc::iovec {
        iov_base: payload.as_ptr() as *mut libc::c_void,
        iov_len: payload.len(),
    };
    let data_len = std::mem::size_of_val(fds) as u32;
    // SAFETY: CMSG_SPACE is a pure computation.
    let space = unsafe { libc::CMSG_SPACE(data_len) } as usize;
    let mut control = vec![0u8; space];
    // SAFETY: msghdr is plain data; all-zero is valid before we fill it.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    if !fds.is_empty() {
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = space;
        // SAFETY: msg has a control buffer of CMSG_SPACE(data_len) bytes, so the first header
        // and its data_len bytes of data fit.
        unsafe {
            let cmsg = libc::CMSG_FIRSTHDR(&msg);
            (*cmsg).cmsg_level = libc::SOL_SOCKET;
            (*cmsg).cmsg_type = libc::SCM_RIGHTS;
            (*cmsg).cmsg_len = libc::CMSG_LEN(data_len) as usize;
            let data = libc::CMSG_DATA(cmsg).cast::<libc::c_int>();
            for (i, fd) in fds.iter().enumerate() {
                std::ptr::write_unaligned(data.add(i), *fd);
            }
        }
    }
    // SAFETY: msg points at live buffers for the duration of the call (the kernel only reads the
    // payload).
    let n = unsafe { libc::sendmsg(channel, &msg, libc::MSG_NOSIGNAL) };
    if n == payload.len() as isize {
        Ok(())
    } else if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Err(io::Error::other("short send on a message socket"))
    }
}

/// A connected pair of unix SEQPACKET sockets (close-on-exec): one message per packet, and the
/// peer's end of file when the other side is closed.
pub fn seqpacket_pair() -> io::Result<(std::os::fd::OwnedFd, std::os::fd::OwnedFd)> {
    use std::os::fd::FromRawFd;
    let mut fds = [0; 2];
    // SAFETY: fds is a valid array for socketpair to fill.
    cvt(unsafe {
        libc::socketpair(
            libc::AF_UNIX,
            libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC,
            0,
            fds.as_mut_ptr(),
        )
    })?;
    // SAFETY: two fresh descriptors, owned by nobody else.
    Ok(unsafe {
        (
            std::os::fd::OwnedFd::from_raw_fd(fds[0]),
            std::os::fd::OwnedFd::from_raw_fd(fds[1]),
        )
    })
}

/// The most descriptors one message carries.
pub const MAX_FDS: usize = 64;

/// Receives one message into `buf` and the descriptor attached to it, if any (close-on-exec).
/// `Ok((0, None))` means the peer closed the channel.
pub fn recv_with_fd(
    channel: libc::c_int,
    buf: &mut [u8],
) -> io::Result<(usize, Option<libc::c_int>)> {
    let (n, fds) = recv_with_fds(channel, buf, 1)?;
    Ok((n, fds.first().copied()))
}

/// Receives one message into `buf` and up to `max` (at most [`MAX_FDS`]) descriptors attached
/// to it (close-on-exec; the kernel closes any beyond `max`). `Ok((0, []))` means the peer
/// closed the channel.
pub fn recv_with_fds(
    channel: libc::c_int,
    buf: &mut [u8],
    max: usize,
) -> io::Result<(usize, Vec<libc::c_int>)> {
    let max = max.clamp(1, MAX_FDS);
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    // SAFETY: CMSG_SPACE is a pure computation.
    let space =
        unsafe { libc::CMSG_SPACE((max * std::mem::size_of::<libc::c_int>()) as u32) } as usize;
    let mut control = vec![0u8; space];
    // SAFETY: msghdr is plain data.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = space;
    // SAFETY: msg points at live buffers.
    let n = unsafe { libc::recvmsg(channel, &mut msg, libc::MSG_CMSG_CLOEXEC) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut fds = Vec::new();
    // SAFETY: the kernel filled msg's control buffer; CMSG_FIRSTHDR checks it is big enough, and
    // cmsg_len says how many descriptors follow the header.
    unsafe {
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        if !cmsg.is_null()
            && (*cmsg).cmsg_level == libc::SOL_SOCKET
            && (*cmsg).cmsg_type == libc::SCM_RIGHTS
        {
            let header = libc::CMSG_LEN(0) as usize;
            let count = ((*cmsg).cmsg_len as usize).saturating_sub(header)
                / std::mem::size_of::<libc::c_int>();
            let data = libc::CMSG_DATA(cmsg).cast::<libc::c_int>();
            for i in 0..count.min(max) {
                fds.push(std::ptr::read_unaligned(data.add(i)));
            }
        }
    }
    if msg.msg_flags & libc::MSG_TRUNC != 0 {
        for fd in fds {
            crate::sys::close(fd);
        }
        return Err(io::Error::other("message larger than the receive buffer"));
    }
    Ok((n as usize, fds))
}
