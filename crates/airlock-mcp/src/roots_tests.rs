#![allow(clippy::unwrap_used)]

use super::*;
use airlock_policy::Mount;

fn roots() -> Roots {
    let mount = |inside: &str, access| Mount {
        host: inside.into(),
        inside: inside.into(),
        access,
        protect: false,
    };
    Roots {
        roots: Some(vec![
            Root {
                path: "/workspace/src".into(),
                writable: false,
                source: "the workspace",
            },
            Root {
                path: "/workspace/src/out".into(),
                writable: true,
                source: "a --write grant",
            },
            Root {
                path: "/tmp".into(),
                writable: true,
                source: "scratch",
            },
        ]),
        deny: vec![mount("/workspace/src/secrets", Access::ReadOnly).inside],
        cwd: "/workspace/src".into(),
    }
}

#[test]
fn boundaries_are_exact() {
    let r = roots();
    assert!(r.check("/workspace/src/a.txt", false).is_ok());
    assert!(matches!(
        r.check("/workspace/src-other/a.txt", false),
        Err(PathDenied::Outside { .. })
    ));
    assert!(matches!(
        r.check("/workspace/srcx", false),
        Err(PathDenied::Outside { .. })
    ));
    assert!(matches!(
        r.check("/tmpfoo", false),
        Err(PathDenied::Outside { .. })
    ));
}

#[test]
fn relative_paths_and_dotdot_resolve_before_the_check() {
    let r = roots();
    assert_eq!(
        r.check("lib/x.rs", false).unwrap(),
        PathBuf::from("/workspace/src/lib/x.rs")
    );
    assert!(matches!(
        r.check("../src-other/x", false),
        Err(PathDenied::Outside { .. })
    ));
    assert!(r.check("../../../etc/passwd", false).is_err());
    assert!(matches!(
        r.check("../../etc/passwd", false),
        Err(PathDenied::Outside { .. })
    ));
    assert!(matches!(
        r.check("/../../..", false),
        Err(PathDenied::Escapes { .. })
    ));
}

#[test]
fn writes_need_a_writable_root_and_deny_wins() {
    let r = roots();
    assert!(matches!(
        r.check("a.txt", true),
        Err(PathDenied::ReadOnly { .. })
    ));
    assert!(r.check("out/a.txt", true).is_ok());
    assert!(r.check("/tmp/x", true).is_ok());
    assert!(matches!(
        r.check("secrets/key", false),
        Err(PathDenied::Hidden { .. })
    ));
    assert!(matches!(r.check("", false), Err(PathDenied::Empty)));
}
