//! What the box's processes can read of their init's memory through `/proc/1`. Init is a copy of
//! airlock (cloned, never exec'd): its argument area holds airlock's command line (the binary's
//! host path, host paths of grants, `--env NAME=VALUE` values) and its environment area the
//! caller's environment, secrets included. `/proc/1/cmdline` is readable by every process of the
//! box even though init is non-dumpable, so init overwrites its argument area with its name and
//! zeroes its environment area. This is init's own copy of that memory: airlock's is untouched.
//!
//! Runs in the box's init between clone and exec (see `child`).

use std::io;
use std::ops::Range;

/// The argument and environment areas of this process, as /proc/self/stat reports them
/// (`arg_start`..`arg_end`, `env_start`..`env_end`).
struct Areas {
    args: Range<usize>,
    env: Range<usize>,
}

/// Replaces this process's command line with `title` (cut to fit) and zeroes its environment,
/// and names its main thread `title` (the `comm` in /proc/1/stat and /proc/1/comm).
pub(crate) fn hide_command_line(title: &str) -> io::Result<()> {
    let areas = areas()?;
    let mut name = [0u8; 16];
    let len = title.len().min(name.len() - 1);
    name[..len].copy_from_slice(&title.as_bytes()[..len]);
    // SAFETY: name is a NUL-terminated buffer of 16 bytes, as PR_SET_NAME reads.
    unsafe { libc::prctl(libc::PR_SET_NAME, name.as_ptr(), 0, 0, 0) };
    if !areas.args.is_empty() {
        let len = title.len().min(areas.args.len() - 1);
        // SAFETY: [args.start, args.end) is this process's own argument block, mapped writable
        // on its initial stack; the standard library only keeps raw pointers into it (read by
        // `std::env::args`, which init does not call), and `len` leaves room for the NUL.
        unsafe {
            std::ptr::write_bytes(areas.args.start as *mut u8, 0, areas.args.len());
            std::ptr::copy_nonoverlapping(title.as_ptr(), areas.args.start as *mut u8, len);
        }
    }
    if !areas.env.is_empty() {
        // SAFETY: [env.start, env.end) is this process's own environment block, mapped writable
        // on its initial stack; nothing in init reads the environment after this point (the
        // command's environment was prepared beforehand as separate strings).
        unsafe { std::ptr::write_bytes(areas.env.start as *mut u8, 0, areas.env.len()) };
    }
    Ok(())
}

fn areas() -> io::Result<Areas> {
    let stat = std::fs::read_to_string("/proc/self/stat")?;
    parse_areas(&stat).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            "/proc/self/stat does not show the argument and environment areas",
        )
    })
}

/// The areas from the text of /proc/self/stat.
fn parse_areas(stat: &str) -> Option<Areas> {
    // Fields after the command name (which may contain spaces) start after the last ')'.
    let rest = stat.get(stat.rfind(')')? + 2..)?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // arg_start, arg_end, env_start and env_end are fields 48 to 51 of stat; `rest` starts at
    // field 3.
    let field = |n: usize| fields.get(n - 3).and_then(|v| v.parse::<usize>().ok());
    let (a0, a1, e0, e1) = (field(48)?, field(49)?, field(50)?, field(51)?);
    let valid = |r: &Range<usize>| r.start != 0 && r.start <= r.end;
    let (args, env) = (a0..a1, e0..e1);
    (valid(&args) && valid(&env)).then_some(Areas { args, env })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_areas_from_stat() {
        // A command name with spaces and parentheses, and the 52 fields of a 6.x kernel.
        let mut fields: Vec<String> = (3..=52).map(|n| n.to_string()).collect();
        fields[48 - 3] = "1000".into();
        fields[49 - 3] = "1020".into();
        fields[50 - 3] = "1020".into();
        fields[51 - 3] = "1100".into();
        let stat = format!("42 (a (b) c) {}\n", fields.join(" "));
        let parsed = parse_areas(&stat).unwrap();
        assert_eq!(parsed.args, 1000..1020);
        assert_eq!(parsed.env, 1020..1100);
        assert!(parse_areas("42 (x) S 1 2").is_none());
        let own = areas().unwrap();
        assert!(!own.args.is_empty() && own.env.start >= own.args.end);
    }
}
