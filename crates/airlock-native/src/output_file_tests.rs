use super::*;
use crate::test_dir::TestDir;
use std::io::Write;
use std::os::unix::fs::FileTypeExt;

/// A test directory with a workspace `ws` and a directory `outside` it.
struct Scratch(TestDir);

impl Scratch {
    fn new(tag: &str) -> Scratch {
        let d = TestDir::new(&format!("output-{tag}"));
        std::fs::create_dir_all(d.path().join("ws")).unwrap();
        std::fs::create_dir_all(d.path().join("outside")).unwrap();
        Scratch(d)
    }

    fn ws(&self) -> PathBuf {
        self.0.path().join("ws")
    }

    fn outside(&self) -> PathBuf {
        self.0.path().join("outside")
    }
}

fn write(f: &mut File, text: &str) {
    f.write_all(text.as_bytes()).unwrap();
}

#[test]
fn a_plain_file_in_the_workspace_is_written_and_truncated_or_appended() {
    let t = Scratch::new("plain");
    let roots = vec![t.ws()];
    let p = t.ws().join("result.json");
    std::fs::write(&p, "old contents that are longer\n").unwrap();
    write(
        &mut open_output(&p, OutputMode::Truncate, &roots).unwrap(),
        "{}\n",
    );
    assert_eq!(std::fs::read_to_string(&p).unwrap(), "{}\n");
    write(
        &mut open_output(&p, OutputMode::Append, &roots).unwrap(),
        "[]\n",
    );
    assert_eq!(std::fs::read_to_string(&p).unwrap(), "{}\n[]\n");
    // A relative path and a new file work too.
    let q = t.ws().join("sub/new.json");
    std::fs::create_dir_all(q.parent().unwrap()).unwrap();
    write(
        &mut open_output(&q, OutputMode::Truncate, &roots).unwrap(),
        "x",
    );
    assert_eq!(std::fs::read_to_string(&q).unwrap(), "x");
}

#[test]
fn a_symlink_the_box_could_have_made_is_never_written_through() {
    let t = Scratch::new("link");
    let roots = vec![t.ws()];
    let victim = t.outside().join("bashrc");
    std::fs::write(&victim, "precious\n").unwrap();
    let link = t.ws().join("result.json");
    std::os::unix::fs::symlink(&victim, &link).unwrap();
    for mode in [OutputMode::Truncate, OutputMode::Append] {
        let err = open_output(&link, mode, &roots).unwrap_err();
        assert!(matches!(err, OutputFileError::Symlink { .. }), "{err}");
    }
    // A dangling symlink would create a file outside: refused as well.
    let dangling = t.ws().join("audit.jsonl");
    std::os::unix::fs::symlink(t.outside().join("new"), &dangling).unwrap();
    assert!(matches!(
        open_output(&dangling, OutputMode::Append, &roots).unwrap_err(),
        OutputFileError::Symlink { .. }
    ));
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
    assert!(!t.outside().join("new").exists());
}

#[test]
fn a_directory_symlink_leading_out_of_the_workspace_is_refused() {
    let t = Scratch::new("dirlink");
    let roots = vec![t.ws()];
    std::os::unix::fs::symlink(t.outside(), t.ws().join("out")).unwrap();
    let err = open_output(
        &t.ws().join("out/result.json"),
        OutputMode::Truncate,
        &roots,
    )
    .unwrap_err();
    assert!(matches!(err, OutputFileError::Escapes { .. }), "{err}");
    assert_eq!(std::fs::read_dir(t.outside()).unwrap().count(), 0);
    // A symlink that stays inside the writable tree is only a detour.
    std::fs::create_dir_all(t.ws().join("real")).unwrap();
    std::os::unix::fs::symlink(t.ws().join("real"), t.ws().join("alias")).unwrap();
    write(
        &mut open_output(&t.ws().join("alias/r.json"), OutputMode::Truncate, &roots).unwrap(),
        "ok",
    );
    assert_eq!(
        std::fs::read_to_string(t.ws().join("real/r.json")).unwrap(),
        "ok"
    );
}

#[test]
fn outside_the_writable_tree_the_callers_symlinks_are_followed() {
    let t = Scratch::new("caller");
    let roots = vec![t.ws()];
    let target = t.outside().join("real.json");
    let link = t.outside().join("link.json");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    write(
        &mut open_output(&link, OutputMode::Truncate, &roots).unwrap(),
        "followed",
    );
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "followed");
    // /dev/null is a device reached directly; /dev/stdout a symlink to a descriptor.
    write(
        &mut open_output(Path::new("/dev/null"), OutputMode::Truncate, &roots).unwrap(),
        "x",
    );
}

#[test]
fn a_fifo_without_a_reader_fails_at_once() {
    let t = Scratch::new("fifo");
    let roots = vec![t.ws()];
    let fifo = t.ws().join("result.json");
    let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: c is a valid C string.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let err = open_output(&fifo, OutputMode::Truncate, &roots).unwrap_err();
    assert!(matches!(err, OutputFileError::NoReader { .. }), "{err}");
    assert!(std::fs::symlink_metadata(&fifo)
        .unwrap()
        .file_type()
        .is_fifo());
}

#[test]
fn a_missing_directory_is_an_error_naming_the_path() {
    let t = Scratch::new("missing");
    let p = t.ws().join("nope/result.json");
    let err = open_output(&p, OutputMode::Truncate, &[t.ws()]).unwrap_err();
    assert!(err.to_string().contains("nope/result.json"), "{err}");
}
