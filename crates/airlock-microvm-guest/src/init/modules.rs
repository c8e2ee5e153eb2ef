//! Loads the kernel modules the box needs, from the initramfs, in dependency order.

use super::sys::{cstr, cvt, io_err, Result};
use std::os::fd::AsRawFd;

/// Where the initramfs holds the modules and the file naming their load order.
const ORDER: &str = "/modules/order";

/// Loads every module listed in `/modules/order` (one file name a line).
pub fn load_all() -> Result<()> {
    let order = std::fs::read_to_string(ORDER).map_err(io_err(format!("cannot read {ORDER}")))?;
    for name in order.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let path = format!("/modules/{name}");
        let file = std::fs::File::open(&path).map_err(io_err(format!("cannot open {path}")))?;
        let params = cstr("")?;
        // SAFETY: finit_module with an open module file and an empty parameter string.
        let ret = unsafe {
            libc::syscall(
                libc::SYS_finit_module,
                file.as_raw_fd(),
                params.as_ptr(),
                0 as libc::c_int,
            )
        } as libc::c_int;
        if ret == -1 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EEXIST) {
            continue;
        }
        cvt(ret, || format!("cannot load kernel module {name}"))?;
    }
    Ok(())
}
