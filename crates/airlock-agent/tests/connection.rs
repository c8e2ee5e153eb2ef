//! The harness's parameter is real: with `AIRLOCK_AGENT_CONNECTION=exec` every suite talks to
//! the standalone executable, and its refusals of a bad descriptor are clear.
#![allow(clippy::unwrap_used)]

mod support;

#[test]
fn the_agent_under_test_is_the_one_the_parameter_names() {
    let a = support::start();
    let exe = std::fs::read_link(format!("/proc/{}/exe", a.pid)).unwrap();
    let name = exe.file_name().unwrap().to_string_lossy().into_owned();
    if support::exec_connection() {
        assert_eq!(name, "airlock-agent", "{exe:?}");
    } else {
        let me = std::env::current_exe().unwrap();
        assert_eq!(exe, me, "a forked agent runs this test's own binary");
    }
    let status = a.finish();
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "{status}"
    );
}

#[test]
fn the_standalone_agent_refuses_what_is_not_a_connection() {
    let run = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_airlock-agent"))
            .args(args)
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap()
    };
    let out = run(&[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("usage: airlock-agent --fd N"));
    let out = run(&["--fd", "9"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("descriptor 9 is not open"));
    // Descriptor 0 is /dev/null here: open, but no socket.
    let out = run(&["--fd", "0"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a stream socket"));
}
