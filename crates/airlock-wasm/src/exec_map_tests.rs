use super::*;
use crate::run_spec::DirAccess;
use std::collections::BTreeMap;

fn map() -> ExecMap {
    ExecMap {
        runner: "/.airlock-wasm/airlock".into(),
        python: "/.airlock-wasm/cache/py.cwasm".into(),
        python_home: None,
        dirs: vec![Preopen {
            path: "/work".into(),
            access: DirAccess::ReadWrite,
        }],
        memory: Some(1 << 28),
        timeout: Some(Duration::from_secs(10)),
        memory_style: MemoryStyle::Reserved,
    }
}

fn exec(argv: &[&str]) -> ExecRequest {
    ExecRequest {
        argv: argv.iter().map(|s| s.to_string()).collect(),
        env: BTreeMap::from([("K".to_string(), "V".to_string())]),
        cwd: Some("/work".into()),
        tty: None,
        stdin: true,
        timeout_ms: Some(2000),
        tag: Some("t".into()),
        user: Default::default(),
    }
}

fn spec_of(req: &ExecRequest) -> RunSpec {
    assert_eq!(req.argv[..2], ["/.airlock-wasm/airlock", "wasm-run"]);
    RunSpec::parse(&req.argv[2..]).unwrap()
}

#[test]
fn python_becomes_a_run_of_the_compiled_cpython_with_the_box_limits() {
    let out = map()
        .map(&exec(&["/usr/bin/python3", "-c", "print(1)"]))
        .unwrap();
    let spec = spec_of(&out);
    assert_eq!(spec.module, PathBuf::from("/.airlock-wasm/cache/py.cwasm"));
    assert_eq!(spec.argv, ["python3", "-c", "print(1)"]);
    assert_eq!(spec.env, [("K".to_string(), "V".to_string())]);
    assert_eq!(spec.memory, Some(1 << 28));
    assert_eq!(spec.memory_style, MemoryStyle::Reserved);
    // The shorter of the policy's and the request's timeout; the agent waits a little longer.
    assert_eq!(spec.timeout, Some(Duration::from_secs(2)));
    assert_eq!(out.timeout_ms, Some(3000));
    assert!(out.stdin && out.env.is_empty());
    assert_eq!(out.tag.as_deref(), Some("t"));
}

#[test]
fn a_wasm_module_runs_by_absolute_path_only() {
    let spec = spec_of(&map().map(&exec(&["/work/m.wasm", "a"])).unwrap());
    assert_eq!(spec.module, PathBuf::from("/work/m.wasm"));
    assert_eq!(spec.argv, ["/work/m.wasm", "a"]);
    let err = map().map(&exec(&["m.wasm"])).unwrap_err();
    assert!(err.0.contains("absolute path"), "{err}");
}

#[test]
fn the_runtimes_python_driver_launch_is_recognised_and_other_drivers_refused() {
    let launch = "exec /usr/bin/python3 /tmp/.airlock-interpreter/python_driver.py 3>&1 1>&2";
    let spec = spec_of(&map().map(&exec(&["sh", "-c", launch])).unwrap());
    assert_eq!(
        spec.argv,
        ["python3", "/tmp/.airlock-interpreter/python_driver.py"]
    );
    let js = "exec node /tmp/.airlock-interpreter/js_driver.js 3>&1 1>&2";
    let err = map().map(&exec(&["sh", "-c", js])).unwrap_err();
    assert!(err.0.contains("runs only Python"), "{err}");
    // Anything else through a shell is a shell command.
    for script in [
        "exec /usr/bin/python3 /tmp/x.py 3>&1 1>&2",
        "exec /usr/bin/python3 /tmp/.airlock-interpreter/python_driver.py 3>&1 1>&2; rm -rf /",
        "echo hi",
    ] {
        let err = map().map(&exec(&["sh", "-c", script])).unwrap_err();
        assert!(
            err.0.contains("a wasm box has no processes"),
            "{script}: {err}"
        );
    }
}

#[test]
fn shells_and_native_programs_are_refused_with_what_works_instead() {
    for argv in [
        &["bash"][..],
        &["/bin/sh", "-c", "true"],
        &["ls", "/"],
        &["/usr/bin/env"],
    ] {
        let err = map().map(&exec(argv)).unwrap_err();
        assert!(
            err.0.contains("no processes") && err.0.contains("python3"),
            "{argv:?}: {err}"
        );
    }
    // A terminal is the runner's stdio: python3 on a PTY runs; a shell on one is still refused.
    let size = Some(airlock_protocol::TtySize { rows: 24, cols: 80 });
    let mut tty = exec(&["python3"]);
    tty.tty = size;
    assert_eq!(map().map(&tty).unwrap().tty, size);
    let mut shell = exec(&["bash", "-i"]);
    shell.tty = size;
    assert!(map().map(&shell).unwrap_err().0.contains("no processes"));
}

#[test]
fn python_gets_its_unpacked_standard_library_read_only_and_a_module_does_not() {
    let home = "/.airlock-wasm/cache/x-home";
    let m = ExecMap {
        python_home: Some(home.into()),
        ..map()
    };
    let ro_home = Preopen {
        path: home.into(),
        access: DirAccess::ReadOnly,
    };
    let spec = spec_of(&m.map(&exec(&["python3", "-c", "pass"])).unwrap());
    assert!(spec.dirs.contains(&ro_home), "{:?}", spec.dirs);
    assert!(spec
        .env
        .contains(&("PYTHONHOME".to_string(), home.to_string())));
    // A PYTHONHOME of the caller's own wins (it names a directory of theirs).
    let mut own = exec(&["python3", "-c", "pass"]);
    own.env.insert("PYTHONHOME".into(), "/work/py".into());
    let spec = spec_of(&m.map(&own).unwrap());
    assert!(spec
        .env
        .contains(&("PYTHONHOME".to_string(), "/work/py".to_string())));
    // Another module sees neither.
    let spec = spec_of(&m.map(&exec(&["/work/m.wasm"])).unwrap());
    assert!(!spec.dirs.contains(&ro_home), "{:?}", spec.dirs);
    assert!(spec.env.iter().all(|(k, _)| k != "PYTHONHOME"));
}
