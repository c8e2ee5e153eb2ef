use super::*;

#[test]
fn the_short_form_names_the_backend() {
    let s = PoolSpec::parse("native:size=4").unwrap();
    assert_eq!(s.backend, Some(BackendKind::Native));
    assert_eq!(s.size, 4);
    assert_eq!(s.network, NetworkMode::None);
    assert_eq!(s.template, None);
    assert_eq!(s.name, "native/base/none");
}

#[test]
fn the_long_form_takes_every_setting() {
    let s = PoolSpec::parse(
        "template=python, backend=gvisor,size=2,network=proxy,memory=256M,cpus=0.5,pids=64,name=py",
    )
    .unwrap();
    assert_eq!(s.backend, Some(BackendKind::Gvisor));
    assert_eq!(s.template.as_deref(), Some("python"));
    assert_eq!(s.network, NetworkMode::Proxy);
    assert_eq!(s.name, "py");
    assert_eq!(s.limits["memory"], "256M");
    assert_eq!(s.limits["cpus"], 0.5);
    assert_eq!(s.limits["pids"], 64);
}

#[test]
fn without_a_backend_the_server_default_is_used() {
    let s = PoolSpec::parse("size=1").unwrap();
    assert_eq!(s.backend, None);
    assert_eq!(s.name, "default/base/none");
}

#[test]
fn each_bad_part_is_named() {
    let cases: &[(&str, PoolSpecError)] = &[
        ("", PoolSpecError::Empty),
        ("native:", PoolSpecError::NoSize),
        (
            "native:size",
            PoolSpecError::NotAPair {
                part: "size".into(),
            },
        ),
        ("size=0", PoolSpecError::BadSize { value: "0".into() }),
        ("size=65", PoolSpecError::BadSize { value: "65".into() }),
        (
            "size=two",
            PoolSpecError::BadSize {
                value: "two".into(),
            },
        ),
        ("size=1,size=2", PoolSpecError::Twice { key: "size".into() }),
        (
            "size=1,colour=red",
            PoolSpecError::UnknownKey {
                key: "colour".into(),
            },
        ),
        (
            "size=1,network=host",
            PoolSpecError::BadNetwork {
                value: "host".into(),
            },
        ),
        (
            "size=1,name=a b",
            PoolSpecError::BadName {
                value: "a b".into(),
            },
        ),
    ];
    for (text, want) in cases {
        assert_eq!(PoolSpec::parse(text).unwrap_err(), *want, "{text:?}");
    }
    let two = PoolSpec::parse("native:size=1,backend=gvisor").unwrap_err();
    assert!(matches!(two, PoolSpecError::TwoBackends { .. }), "{two}");
    let kind = PoolSpec::parse("vmware:size=1").unwrap_err();
    assert!(matches!(&kind, PoolSpecError::BadBackend { value, .. } if value == "vmware"));
    let mem = PoolSpec::parse("size=1,memory=lots").unwrap_err();
    assert!(mem.to_string().starts_with("memory=\"lots\""), "{mem}");
    let cpus = PoolSpec::parse("size=1,cpus=-1").unwrap_err();
    assert!(cpus.to_string().contains("positive"), "{cpus}");
}
