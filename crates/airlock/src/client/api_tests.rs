#![allow(clippy::unwrap_used)]

use super::*;

#[test]
fn refusals_read_as_message_and_code() {
    let e = error_message(
        404,
        r#"{"error": {"code": "not_found", "message": "no sandbox \"x\""}}"#,
    );
    assert_eq!(e.to_string(), "no sandbox \"x\" (not_found)");
    let e = error_message(502, "<html>bad gateway</html>");
    assert!(e.to_string().contains("HTTP 502"), "{e}");
}

#[test]
fn path_segments_are_encoded() {
    assert_eq!(segment("sbx_0a-1.2~"), "sbx_0a-1.2~");
    assert_eq!(segment("a/b?c d"), "a%2Fb%3Fc%20d");
}

#[test]
fn a_missing_key_names_the_flag_and_the_variable() {
    // Only meaningful when the variable is unset in the test's environment.
    if std::env::var_os("AIRLOCK_API_KEY").is_some() {
        return;
    }
    let args = ServerArgs {
        server: Some("http://127.0.0.1:1".into()),
        api_key: None,
    };
    let e = Api::new(&args).err().unwrap().to_string();
    assert!(
        e.contains("--api-key") && e.contains("AIRLOCK_API_KEY"),
        "{e}"
    );
    let args = ServerArgs {
        server: Some("127.0.0.1:7777".into()),
        api_key: Some("k".into()),
    };
    assert!(Api::new(&args).is_err());
}
