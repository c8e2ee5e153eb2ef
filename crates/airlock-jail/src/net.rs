//! The box's network namespace: bring loopback up (it starts down).

use crate::sys::cvt;
use std::io;

/// Sets `lo` up in the current network namespace.
pub fn loopback_up() -> io::Result<()> {
    // SAFETY: plain socket creation.
    let sock = cvt(unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) })?;
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
