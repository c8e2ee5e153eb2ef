use super::*;
use crate::run_spec::DirAccess;

fn scope() -> Scope {
    Scope::new(&[
        Preopen {
            path: "/work".into(),
            access: DirAccess::ReadWrite,
        },
        Preopen {
            path: "/tmp".into(),
            access: DirAccess::ReadWrite,
        },
    ])
}

#[test]
fn paths_under_a_preopen_are_in_and_dot_dot_cannot_climb_out() {
    let s = scope();
    for p in ["/work", "/work/a/b", "/tmp/./x", "/work/a/../b"] {
        assert!(s.contains(p), "{p}");
    }
    for p in [
        "/",
        "/workspace",
        "/work/../etc/passwd",
        "/usr/bin",
        "relative",
        "/tmp/../proc",
    ] {
        assert!(!s.contains(p), "{p}");
    }
}

#[test]
fn file_operations_outside_are_refused_naming_the_directories() {
    let s = scope();
    let err = s
        .check_op(&Op::ReadFile {
            path: "/etc/passwd".into(),
        })
        .unwrap_err();
    assert!(err.contains("/work, /tmp"), "{err}");
    let rename = Op::Rename {
        from: "/work/a".into(),
        to: "/etc/a".into(),
    };
    assert!(s.check_op(&rename).is_err());
    assert!(s.check_op(&Op::Ping).is_ok());
    assert!(s
        .check_op(&Op::Stat {
            path: "/work/x".into()
        })
        .is_ok());
}
