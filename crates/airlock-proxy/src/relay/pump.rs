//! One direction of a tunnel: from one socket to the other until end of file, then a
//! half-close.
//!
//! A direction starts by copying through a small buffer, which keeps idle and chatty tunnels
//! cheap. When a read fills that buffer the direction is moving bulk data: it takes a pipe and
//! splices from then on, each round filling the empty pipe from the source and emptying it into
//! the destination. A pipe unused for [`PIPE_IDLE`] goes back; without a pipe (bound reached,
//! or splice refused for these sockets) a bulk direction copies through a large buffer.

use super::pipe::{Pipe, PIPES, PIPE_BYTES};
use super::{sys, Meter, RelayError};
use std::io;
use std::os::fd::AsFd;
use std::time::Duration;
use tokio::io::Interest;
use tokio::net::TcpStream;

/// The copy buffer of a direction that has not moved bulk data (yet).
const BUF: usize = 64 * 1024;
/// The copy buffer of a bulk direction without a pipe (fewer, larger system calls).
const BULK_BUF: usize = 1024 * 1024;
/// A bulk direction whose source has had nothing for this long gives its pipe back.
const PIPE_IDLE: Duration = Duration::from_secs(1);

/// What waiting for the source produced.
enum Got {
    Data(usize),
    Eof,
    /// Nothing arrived within the idle limit.
    Idle,
    /// The kernel refused the operation for these descriptors (`EINVAL` and kin).
    Refused(io::Error),
}

/// Relays `from` → `to` until end of file on `from`, then half-closes `to`.
pub(crate) async fn pump(
    from: &TcpStream,
    to: &TcpStream,
    meter: &Meter<'_>,
) -> Result<(), RelayError> {
    pump_up_to(from, to, meter, None).await?;
    // The peer may have closed already; the relay's outcome does not depend on it.
    let _ = sys::shutdown_write(to.as_fd());
    Ok(())
}

/// Relays exactly `len` bytes `from` → `to` (never reading more from `from`), or fewer if
/// `from` ends first; returns how many were relayed. Does not half-close `to`.
pub(crate) async fn pump_exact(
    from: &TcpStream,
    to: &TcpStream,
    meter: &Meter<'_>,
    len: u64,
) -> Result<u64, RelayError> {
    pump_up_to(from, to, meter, Some(len)).await
}

/// Relays until end of file on `from`, or until `limit` bytes (if given) have been relayed.
async fn pump_up_to(
    from: &TcpStream,
    to: &TcpStream,
    meter: &Meter<'_>,
    limit: Option<u64>,
) -> Result<u64, RelayError> {
    let mut buf = vec![0u8; BUF];
    let mut pipe: Option<Pipe<'static>> = None;
    let mut can_splice = true;
    let mut moved = 0u64;
    loop {
        let left = match limit {
            Some(limit) if moved >= limit => break,
            Some(limit) => usize::try_from(limit - moved).unwrap_or(usize::MAX),
            None => usize::MAX,
        };
        if let Some(p) = pipe.as_mut() {
            match splice_round(from, to, p, &mut buf, meter, left).await? {
                Round::Moved(n) => moved += n as u64,
                Round::Eof => break,
                Round::Idle => pipe = None,
                Round::Refused(n) => {
                    moved += n as u64;
                    pipe = None;
                    can_splice = false;
                    buf.resize(BULK_BUF, 0);
                }
            }
            continue;
        }
        let want = buf.len().min(left);
        let n = copy_round(from, to, &mut buf[..want], meter).await?;
        if n == 0 {
            break;
        }
        moved += n as u64;
        if n == buf.len() {
            if can_splice {
                pipe = PIPES.take(PIPE_BYTES);
            }
            if pipe.is_none() && buf.len() < BULK_BUF {
                buf.resize(BULK_BUF, 0);
            }
        }
    }
    Ok(moved)
}

/// What a splice round did; `Moved` and `Refused` carry the bytes it passed on.
enum Round {
    Moved(usize),
    Eof,
    Idle,
    Refused(usize),
}

/// Reads once from `from` into `buf` and writes it all to `to`; returns the count, `0` at end
/// of file.
async fn copy_round(
    from: &TcpStream,
    to: &TcpStream,
    buf: &mut [u8],
    meter: &Meter<'_>,
) -> Result<usize, RelayError> {
    let want = buf.len();
    let got = read_some(from, meter, want, None, |len| {
        sys::read(from.as_fd(), &mut buf[..len])
    })
    .await?;
    let n = match got {
        Got::Data(n) => n,
        Got::Eof | Got::Idle => return Ok(0),
        Got::Refused(e) => return Err(RelayError::Read(e)),
    };
    write_all(to, &buf[..n]).await?;
    meter.forwarded(n);
    Ok(n)
}

/// Fills the empty pipe from `from` (at most `left` bytes), then empties it into `to`.
async fn splice_round(
    from: &TcpStream,
    to: &TcpStream,
    pipe: &mut Pipe<'_>,
    buf: &mut [u8],
    meter: &Meter<'_>,
    left: usize,
) -> Result<Round, RelayError> {
    let want = pipe.capacity().min(left);
    let mut passed = 0;
    match read_some(from, meter, want, Some(PIPE_IDLE), |len| {
        pipe.fill_from(from.as_fd(), len)
    })
    .await?
    {
        Got::Data(_) => {}
        Got::Eof => return Ok(Round::Eof),
        Got::Idle => return Ok(Round::Idle),
        // Nothing entered the pipe: copying from here on loses nothing.
        Got::Refused(_) => return Ok(Round::Refused(0)),
    }
    while pipe.len() > 0 {
        to.writable().await.map_err(RelayError::Write)?;
        match to.try_io(Interest::WRITABLE, || pipe.drain_to(to.as_fd())) {
            Ok(0) => return Err(RelayError::Write(io::ErrorKind::WriteZero.into())),
            Ok(n) => {
                meter.forwarded(n);
                passed += n;
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(e) if refused(&e) => {
                // The destination takes no splice: pass what the pipe holds on by copying.
                while pipe.len() > 0 {
                    let n = pipe.read_into(buf).map_err(RelayError::Read)?;
                    if n == 0 {
                        return Err(RelayError::Read(io::ErrorKind::UnexpectedEof.into()));
                    }
                    write_all(to, &buf[..n]).await?;
                    meter.forwarded(n);
                    passed += n;
                }
                return Ok(Round::Refused(passed));
            }
            Err(e) => return Err(RelayError::Write(e)),
        }
    }
    Ok(Round::Moved(passed))
}

/// Half-closes `to` (end of file for its peer); a peer that is gone already does not matter.
pub(crate) fn half_close(to: &TcpStream) {
    let _ = sys::shutdown_write(to.as_fd());
}

/// Reads once from `from` into `buf`, within the budget: the count, `0` at end of file.
pub(crate) async fn read_metered(
    from: &TcpStream,
    meter: &Meter<'_>,
    buf: &mut [u8],
) -> Result<usize, RelayError> {
    let want = buf.len();
    match read_some(from, meter, want, None, |len| {
        sys::read(from.as_fd(), &mut buf[..len])
    })
    .await?
    {
        Got::Data(n) => Ok(n),
        Got::Eof | Got::Idle => Ok(0),
        Got::Refused(e) => Err(RelayError::Read(e)),
    }
}

/// Waits until `from` is readable (at most `idle`, if given) and reads with `read(len)`, `len`
/// being what the budget grants of `want`. Once the budget is used up, end of file still
/// passes; any further byte ends the tunnel.
async fn read_some(
    from: &TcpStream,
    meter: &Meter<'_>,
    want: usize,
    idle: Option<Duration>,
    mut read: impl FnMut(usize) -> io::Result<usize>,
) -> Result<Got, RelayError> {
    loop {
        match idle {
            Some(limit) => match tokio::time::timeout(limit, from.readable()).await {
                Err(_) => return Ok(Got::Idle),
                Ok(ready) => ready.map_err(RelayError::Read)?,
            },
            None => from.readable().await.map_err(RelayError::Read)?,
        }
        let granted = meter.reserve(want);
        let result = if granted == 0 {
            let mut probe = [0u8; 1];
            match from.try_read(&mut probe) {
                Ok(0) => Ok(0),
                Ok(_) => return Err(RelayError::BudgetExhausted),
                Err(e) => Err(e),
            }
        } else {
            from.try_io(Interest::READABLE, || read(granted))
        };
        meter.settle(granted, *result.as_ref().unwrap_or(&0));
        match result {
            Ok(0) => return Ok(Got::Eof),
            Ok(n) => return Ok(Got::Data(n)),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(e) if refused(&e) => return Ok(Got::Refused(e)),
            Err(e) => return Err(RelayError::Read(e)),
        }
    }
}

/// Writes all of `data` to `to`.
pub(crate) async fn write_all(to: &TcpStream, mut data: &[u8]) -> Result<(), RelayError> {
    while !data.is_empty() {
        to.writable().await.map_err(RelayError::Write)?;
        match to.try_write(data) {
            Ok(0) => return Err(RelayError::Write(io::ErrorKind::WriteZero.into())),
            Ok(n) => data = &data[n..],
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(e) => return Err(RelayError::Write(e)),
        }
    }
    Ok(())
}

/// Whether the kernel refuses splice for these descriptors (as opposed to a failing socket).
fn refused(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EINVAL | libc::ENOSYS | libc::EOPNOTSUPP)
    )
}
