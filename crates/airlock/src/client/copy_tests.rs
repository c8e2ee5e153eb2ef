#![allow(clippy::unwrap_used)]

use super::*;

#[test]
fn sides_are_parsed() {
    assert_eq!(endpoint("-").unwrap(), Endpoint::Std);
    assert_eq!(
        endpoint("sbx_1:/tmp/a").unwrap(),
        Endpoint::Sandbox {
            id: "sbx_1".into(),
            path: "/tmp/a".into()
        }
    );
    assert_eq!(
        endpoint("data.bin").unwrap(),
        Endpoint::Local("data.bin".into())
    );
    assert_eq!(endpoint("./a:b").unwrap(), Endpoint::Local("./a:b".into()));
    assert_eq!(
        endpoint("/abs/a:/b").unwrap(),
        Endpoint::Local("/abs/a:/b".into())
    );
    assert!(endpoint("sbx_1:tmp/a")
        .unwrap_err()
        .to_string()
        .contains("absolute"));
}

#[test]
fn a_directory_destination_keeps_the_name() {
    let dir = std::env::temp_dir();
    assert_eq!(into_dir(dir.clone(), "/tmp/x.txt"), dir.join("x.txt"));
    assert_eq!(
        into_dir("/nonexistent/out".into(), "/tmp/x.txt"),
        PathBuf::from("/nonexistent/out")
    );
}
