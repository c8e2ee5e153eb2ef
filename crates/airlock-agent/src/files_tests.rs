use super::*;

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("airlock-agent-files-{name}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&d);
    fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn list_respects_depth_and_sorts() {
    let d = tmp("list");
    fs::create_dir_all(d.join("a/b/c")).unwrap();
    fs::write(d.join("a/f"), b"xy").unwrap();
    std::os::unix::fs::symlink("/nonexistent", d.join("link")).unwrap();
    let s = d.to_str().unwrap();
    let one: Vec<String> = list_dir(s, 1)
        .unwrap()
        .into_iter()
        .map(|e| e.name)
        .collect();
    assert_eq!(one, vec!["a", "link"]);
    let all = list_dir(s, 32).unwrap();
    let names: Vec<&str> = all
        .iter()
        .map(|e| e.path.strip_prefix(s).unwrap())
        .collect();
    assert_eq!(names, vec!["/a", "/a/b", "/a/b/c", "/a/f", "/link"]);
    assert_eq!(all[3].size, 2);
    assert_eq!(all[4].kind, EntryKind::Symlink);
    assert_eq!(list_dir(s, 2).unwrap().len(), 4);
    fs::remove_dir_all(&d).unwrap();
}

#[test]
fn errors_have_codes() {
    use airlock_protocol::ErrorCode;
    assert_eq!(stat("relative").unwrap_err().code(), ErrorCode::Invalid);
    assert_eq!(
        stat("/nonexistent/x").unwrap_err().code(),
        ErrorCode::NotFound
    );
    let d = tmp("err");
    let s = d.to_str().unwrap();
    make_dir(&format!("{s}/x"), false).unwrap();
    assert_eq!(
        make_dir(&format!("{s}/x"), false).unwrap_err().code(),
        ErrorCode::Exists
    );
    assert_eq!(
        make_dir(&format!("{s}/p/q"), false).unwrap_err().code(),
        ErrorCode::NotFound
    );
    make_dir(&format!("{s}/p/q"), true).unwrap();
    assert_eq!(
        remove(&format!("{s}/p"), false).unwrap_err().code(),
        ErrorCode::Exists
    );
    remove(&format!("{s}/p"), true).unwrap();
    rename(&format!("{s}/x"), &format!("{s}/y")).unwrap();
    assert_eq!(stat(&format!("{s}/y")).unwrap().kind, EntryKind::Dir);
    assert_eq!(
        list_dir(&format!("{s}/missing"), 1).unwrap_err().code(),
        ErrorCode::NotFound
    );
    fs::remove_dir_all(&d).unwrap();
}

#[test]
fn a_listing_past_its_time_budget_is_refused_as_a_limit() {
    let d = std::env::temp_dir().join(format!("airlock-list-budget-{}", std::process::id()));
    std::fs::create_dir_all(d.join("a/b")).unwrap();
    let s = d.to_str().unwrap();
    let err = list_dir_within(s, 32, std::time::Duration::ZERO).unwrap_err();
    assert_eq!(err.code(), airlock_protocol::ErrorCode::Limit);
    assert!(err.to_string().contains("took longer than"), "{err}");
    assert_eq!(
        list_dir(s, 32).unwrap().len(),
        2,
        "within the budget it lists"
    );
    std::fs::remove_dir_all(&d).unwrap();
}
