use super::*;

#[test]
fn questions_show_what_is_asked_for() {
    let q = run_question("run_command", "touch marker");
    assert!(
        q.contains("run_command") && q.contains("touch marker"),
        "{q}"
    );
    let long = "x".repeat(5000);
    let q = run_question("run_code", &long);
    assert!(q.contains("[…cut]") && q.len() < 2200, "{}", q.len());
    let q = grant_question("svc.test:443", "download the package index");
    assert!(
        q.contains("svc.test:443") && q.contains("download the package index"),
        "{q}"
    );
}
