use super::*;

fn dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("airlock-uploads-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn put(d: &Path, name: &str, bytes: usize, age_secs: u64) {
    let p = d.join(name);
    std::fs::write(&p, vec![b'x'; bytes]).unwrap();
    let f = std::fs::File::options().write(true).open(&p).unwrap();
    f.set_modified(std::time::SystemTime::now() - Duration::from_secs(age_secs))
        .unwrap();
}

fn h(c: char) -> String {
    std::iter::repeat_n(c, 64).collect()
}

#[test]
fn an_upload_past_the_budget_drops_the_least_recently_used_first() {
    let d = dir("lru");
    let u = Uploads::new(d.clone(), 100);
    put(&d, &format!("{}.ok", h('a')), 40, 300);
    put(&d, &format!("{}.ok", h('b')), 40, 200);
    put(&d, &format!("{}.tar", h('c')), 10, 100);
    // `a` is used again: `b` is now the least recently used.
    u.touch(&h('a'));
    let r = u.reserve(30).unwrap();
    assert!(u.checked(&h('a')).is_file());
    assert!(
        !u.checked(&h('b')).is_file(),
        "the least recently used stays"
    );
    assert!(u.unchecked(&h('c')).is_file());
    drop(r);
    // What fits needs nothing dropped.
    let _r = u.reserve(10).unwrap();
    assert!(u.checked(&h('a')).is_file() && u.unchecked(&h('c')).is_file());
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn uploads_streaming_in_hold_their_share_until_they_end_and_old_partials_go() {
    let d = dir("streaming");
    let u = Uploads::new(d.clone(), 100);
    put(&d, &format!("{}.partial-0123", h('d')), 50, 2 * 3600);
    put(&d, &format!("{}.partial-4567", h('e')), 50, 1);
    let first = u.reserve(60).unwrap();
    assert!(
        !d.join(format!("{}.partial-0123", h('d'))).exists(),
        "a partial file over an hour old stays"
    );
    assert!(
        d.join(format!("{}.partial-4567", h('e'))).exists(),
        "a fresh partial file (an upload under way) was removed"
    );
    assert_eq!(
        u.reserve(50).unwrap_err(),
        Full {
            budget: 100,
            streaming: 60
        }
    );
    drop(first);
    let _second = u.reserve(50).unwrap();
    std::fs::remove_dir_all(&d).unwrap();
}
