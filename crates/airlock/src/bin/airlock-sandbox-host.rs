//! `airlock-sandbox-host`: the host process of one native box (what `airlock sandbox-host`
//! is), as an executable of its own that links only the native box. Every idle box keeps one
//! of these and a copy of it (the box's init; a standalone box also its cleanup sentinel), and the `exec` of
//! a position-independent executable dirties all of its relocated read-only data: airlock's is
//! ~680 KiB, this one's ~170 KiB. airlock starts it with its control socket at descriptor 3
//! (see `airlock_native::box_host`); with `--sentinel-service` it is the one cleanup sentinel
//! every box's host joins instead; told `zygote` on descriptor 3 it is the server's host zygote,
//! which clones every box's host so that they share its relocated pages
//! (`airlock_native::host_zygote`). Not for direct use.

use std::os::fd::{AsFd, FromRawFd};
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    if args.len() == 1 && args[0] == airlock_native::box_host::BUILD_ID_ARG {
        // Asked by airlock before its first use: are we from its build?
        println!("{}", airlock_native::box_host::BUILD_ID);
        return ExitCode::SUCCESS;
    }
    let service = args.len() == 1 && args[0] == airlock_native::SENTINEL_SERVICE_ARG;
    // SAFETY: fcntl only inspects the descriptor number.
    if !(args.is_empty() || service) || unsafe { libc::fcntl(3, libc::F_GETFD) } == -1 {
        eprintln!(
            "airlock-sandbox-host is started by airlock itself, with its control socket at descriptor 3 and no arguments (or {})",
            airlock_native::SENTINEL_SERVICE_ARG
        );
        return ExitCode::from(2);
    }
    airlock_jail::rlimits::raise_open_file_limit();
    // SAFETY: descriptor 3 is the control socket our parent set up for us; we own it from here.
    let control = unsafe { std::os::fd::OwnedFd::from_raw_fd(3) };
    let code = if service {
        airlock_native::sentinel_service_main(control)
    } else if airlock_native::host_zygote::asked(control.as_fd()) {
        airlock_native::host_zygote::zygote_main(control, airlock_native::sandbox_host_main)
    } else {
        airlock_native::sandbox_host_main(control)
    };
    ExitCode::from(code.clamp(0, 255) as u8)
}
