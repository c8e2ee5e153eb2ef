//! Which process of a native box holds a connection to its proxy: the name an approval
//! question shows ("curl (pid 12 in the box)"). The box's network namespace is read through
//! its init's `/proc/<pid>/net/tcp{,6}` (the client end's socket inode), and the box's
//! processes — the init's descendants — are searched for a descriptor of that socket.
//!
//! The name and command line are the box's own words: a box can call itself anything. They are
//! shown as what the box says, stripped of control characters and cut short, never trusted.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;

/// How many processes holding the socket are named (a forked client shares it).
const MAX_NAMED: usize = 3;
/// How much of a command line is shown.
const MAX_CMDLINE: usize = 120;
/// How many of the box's processes are searched at most.
const MAX_SEARCHED: usize = 4096;

/// Finds the processes of the box whose init is `init` (a host pid) that hold the client end
/// of the connection from `peer` to the proxy's `local` address; `None` if none is found.
pub fn describe(init: libc::pid_t, peer: SocketAddr, local: SocketAddr) -> Option<String> {
    let inode = socket_inode(init, peer, local)?;
    let target = format!("socket:[{inode}]");
    let mut named = Vec::new();
    for pid in box_processes(init) {
        if holds(pid, &target) {
            named.push(name_of(pid));
            if named.len() == MAX_NAMED {
                break;
            }
        }
    }
    (!named.is_empty()).then(|| named.join(", "))
}

/// The inode of the socket whose local end is `peer` and remote end `local`, from the box's
/// own TCP tables.
fn socket_inode(init: libc::pid_t, peer: SocketAddr, local: SocketAddr) -> Option<u64> {
    let table = match peer.ip() {
        IpAddr::V4(_) => "tcp",
        IpAddr::V6(_) => "tcp6",
    };
    let text = std::fs::read_to_string(format!("/proc/{init}/net/{table}")).ok()?;
    find_inode(&text, peer, local)
}

/// The inode of the entry of a `/proc/net/tcp{,6}` table from `from` to `to`.
pub(crate) fn find_inode(table: &str, from: SocketAddr, to: SocketAddr) -> Option<u64> {
    let (from, to) = (hex_addr(from), hex_addr(to));
    table.lines().skip(1).find_map(|line| {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() > 9 && f[1].eq_ignore_ascii_case(&from) && f[2].eq_ignore_ascii_case(&to) {
            f[9].parse().ok().filter(|&i| i != 0)
        } else {
            None
        }
    })
}

/// An address as `/proc/net/tcp` writes it: the address's 32-bit words in host byte order
/// (little-endian here), then the port, in hex.
fn hex_addr(a: SocketAddr) -> String {
    let ip = match a.ip() {
        IpAddr::V4(v4) => format!("{:08X}", u32::from_ne_bytes(v4.octets())),
        IpAddr::V6(v6) => v6
            .octets()
            .chunks(4)
            .map(|w| format!("{:08X}", u32::from_ne_bytes([w[0], w[1], w[2], w[3]])))
            .collect(),
    };
    format!("{ip}:{:04X}", a.port())
}

/// The init and its descendants (through each thread's `children` list), breadth first.
fn box_processes(init: libc::pid_t) -> Vec<libc::pid_t> {
    let mut found = vec![init];
    let mut i = 0;
    while i < found.len() && found.len() < MAX_SEARCHED {
        let pid = found[i];
        i += 1;
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
            continue;
        };
        for task in tasks.flatten() {
            let children =
                std::fs::read_to_string(task.path().join("children")).unwrap_or_default();
            found.extend(
                children
                    .split_whitespace()
                    .filter_map(|c| c.parse::<libc::pid_t>().ok()),
            );
        }
    }
    found.truncate(MAX_SEARCHED);
    found
}

/// Whether `pid` has a descriptor whose link reads `target`.
fn holds(pid: libc::pid_t, target: &str) -> bool {
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return false;
    };
    fds.flatten()
        .any(|fd| std::fs::read_link(fd.path()).is_ok_and(|l: PathBuf| l.as_os_str() == target))
}

/// `command line (pid N in the box)`, in the box's own words, made safe to print.
fn name_of(pid: libc::pid_t) -> String {
    let raw = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let mut words: Vec<String> = raw
        .split(|&b| b == 0)
        .filter(|w| !w.is_empty())
        .map(|w| String::from_utf8_lossy(w).into_owned())
        .collect();
    if words.is_empty() {
        words.push(std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default());
    }
    let shown = printable(&words.join(" "), MAX_CMDLINE);
    match in_box_pid(pid) {
        Some(inner) => format!("{shown} (pid {inner} in the box)"),
        None => shown,
    }
}

/// The pid as the box sees it: the last field of `NSpid` in its status.
fn in_box_pid(pid: libc::pid_t) -> Option<u32> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("NSpid:"))
        .and_then(|rest| rest.split_whitespace().last())
        .and_then(|p| p.parse().ok())
}

/// `text` with every control or non-ASCII-printable character replaced by `?`, trimmed, and
/// cut to `max` characters (`...` marks a cut).
pub(crate) fn printable(text: &str, max: usize) -> String {
    let clean: String = text
        .trim()
        .chars()
        .map(|c| {
            if c == ' ' || c.is_ascii_graphic() {
                c
            } else {
                '?'
            }
        })
        .collect();
    if clean.chars().count() <= max {
        return if clean.is_empty() { "?".into() } else { clean };
    }
    let mut cut: String = clean.chars().take(max).collect();
    cut.push_str("...");
    cut
}

/// What the proxy of the box whose init is `init` names held connections with.
pub fn namer(init: libc::pid_t) -> airlock_proxy::approval::PeerNamer {
    std::sync::Arc::new(move |client, listener| describe(init, client, listener))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_entry_from_the_client_to_the_proxy_is_found_in_a_tcp_table() {
        let table = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n\
   0: 0100007F:0C38 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 111 1 0 100 0 0 10 0\n\
   1: 0100007F:D431 0100007F:0C38 01 00000000:00000000 00:00000000 00000000  1000        0 222 1 0 20 4 30 10 -1\n\
   2: 0100007F:0C38 0100007F:D431 01 00000000:00000000 00:00000000 00000000  1000        0 333 1 0 20 4 30 10 -1\n";
        let client: SocketAddr = "127.0.0.1:54321".parse().unwrap();
        let proxy: SocketAddr = "127.0.0.1:3128".parse().unwrap();
        assert_eq!(find_inode(table, client, proxy), Some(222));
        assert_eq!(find_inode(table, proxy, client), Some(333), "the other end");
        let other: SocketAddr = "127.0.0.1:54322".parse().unwrap();
        assert_eq!(find_inode(table, other, proxy), None);
        assert_eq!(find_inode("", client, proxy), None);
    }

    #[test]
    fn addresses_are_written_as_the_kernel_writes_them() {
        assert_eq!(hex_addr("127.0.0.1:3128".parse().unwrap()), "0100007F:0C38");
        assert_eq!(
            hex_addr("[::1]:3128".parse().unwrap()),
            "00000000000000000000000001000000:0C38"
        );
    }

    #[test]
    fn a_name_the_box_chose_cannot_reach_a_terminal_as_control_characters() {
        assert_eq!(printable("curl\u{1b}[2J\u{7}x", 40), "curl?[2J?x");
        assert_eq!(printable("caf\u{e9}\r\n", 40), "caf?");
        assert_eq!(printable("", 40), "?");
        assert_eq!(
            printable(&"a".repeat(50), 10),
            format!("{}...", "a".repeat(10))
        );
    }

    #[test]
    fn this_process_is_found_holding_its_own_connection() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (_server_end, _) = listener.accept().unwrap();
        // SAFETY: getpid cannot fail.
        let me = unsafe { libc::getpid() };
        let named = describe(
            me,
            client.local_addr().unwrap(),
            listener.local_addr().unwrap(),
        )
        .expect("this process holds the client end");
        assert!(named.contains("airlock_native"), "{named}");
        assert!(named.contains(&format!("(pid {me} in the box)")), "{named}");
    }
}
