use super::*;

#[test]
fn the_arguments_round_trip() {
    let spec = RunSpec {
        module: "/c/py.cwasm".into(),
        argv: vec!["python3".into(), "--".into(), "-c".into(), "x=1".into()],
        env: vec![("A".into(), "b=c".into())],
        dirs: vec![
            Preopen {
                path: "/w:x".into(),
                access: DirAccess::ReadWrite,
            },
            Preopen {
                path: "/r".into(),
                access: DirAccess::ReadOnly,
            },
        ],
        memory: Some(5),
        timeout: Some(Duration::from_millis(1500)),
        memory_style: MemoryStyle::Reserved,
    };
    assert_eq!(RunSpec::parse(&spec.to_args()).unwrap(), spec);
    let bounded = RunSpec {
        memory_style: MemoryStyle::Bounded,
        ..spec
    };
    assert_eq!(RunSpec::parse(&bounded.to_args()).unwrap(), bounded);
}

#[test]
fn bad_arguments_are_refused_with_what_was_wrong() {
    let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    for (bad, want) in [
        (&["--", "x"][..], "--module is missing"),
        (&["--module", "m"], "no argv"),
        (
            &["--module", "m", "--dir", "/x", "--", "a"],
            "ro:PATH or rw:PATH",
        ),
        (
            &["--module", "m", "--memory", "lots", "--", "a"],
            "not a number",
        ),
        (&["--module", "m", "--env", "NOEQ", "--", "a"], "NAME=VALUE"),
        (
            &["--module", "m", "--memory-style", "huge", "--", "a"],
            "not \"reserved\" or \"bounded\"",
        ),
        (&["--module"], "needs a value"),
        (&["--frob", "1", "--", "a"], "unknown flag"),
    ] {
        let err = RunSpec::parse(&args(bad)).unwrap_err().to_string();
        assert!(err.contains(want), "{bad:?}: {err}");
    }
}
