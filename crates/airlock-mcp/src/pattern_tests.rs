#![allow(clippy::unwrap_used)]

use super::*;

fn pats(v: &str) -> Vec<ToolPattern> {
    parse_patterns("--tools", &[v.to_string()]).unwrap()
}

#[test]
fn globs_match_whole_names() {
    let p = pats("read_*,search,?et");
    assert!(p[0].matches("read_file"));
    assert!(p[0].matches("read_"));
    assert!(!p[0].matches("xread_file"));
    assert!(p[1].matches("search"));
    assert!(!p[1].matches("search_files"));
    assert!(p[2].matches("get"));
    assert!(!p[2].matches("gets"));
    assert!(pats("*_file")[0].matches("write_file"));
    assert!(pats("a*b*c")[0].matches("aXbYbZc"));
    assert!(!pats("a*b*c")[0].matches("aXbYbZ"));
}

#[test]
fn deny_wins_and_allow_list_narrows() {
    let f = ToolFilter::from_flags(&["read_*,list_*".into()], &["read_secret".into()]).unwrap();
    assert_eq!(f.verdict("read_file"), ToolVerdict::Allowed);
    assert_eq!(
        f.verdict("read_secret"),
        ToolVerdict::Denied {
            pattern: "read_secret".into()
        }
    );
    assert!(matches!(
        f.verdict("write_file"),
        ToolVerdict::NotAllowed { .. }
    ));
    assert_eq!(
        ToolFilter::default().verdict("anything"),
        ToolVerdict::Allowed
    );
}

#[test]
fn bad_patterns_are_refused() {
    assert_eq!(
        parse_patterns("--tools", &["a,,b".into()]),
        Err(PatternError::Empty { flag: "--tools" })
    );
    assert!(matches!(
        parse_patterns("--deny-tools", &["a b".into()]),
        Err(PatternError::BadChar { .. })
    ));
}
