//! envd's `filesystem.Filesystem` Connect service, unary methods: `Stat`, `MakeDir`, `Move`,
//! `ListDir`, `Remove`. Entries are proto3-JSON `EntryInfo`s. Relative paths resolve against
//! the user's home. The watch methods live in [`super::watch`].

use super::auth::{resolve_path_as, E2bUser};
use super::boxio::with_session;
use super::connect::{parse_unary, read_body, unary_error, unary_ok, MAX_MESSAGE};
use super::error::E2bError;
use super::views::rfc3339_secs;
use crate::state::AppState;
use airlock_protocol::{Entry, EntryKind, MAX_LIST_DEPTH};
use airlock_runtime::AgentChannel;
use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::Response;
use serde::Deserialize;
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;

/// The extended-attribute prefix under which envd keeps a file's metadata.
pub const METADATA_XATTR_PREFIX: &str = "user.e2b.";
/// Most symlinks followed to describe one path (the kernel's own bound).
const MAX_SYMLINK_HOPS: usize = 40;

#[derive(Debug, Default, Deserialize)]
struct PathRequest {
    #[serde(default)]
    path: String,
}

#[derive(Debug, Default, Deserialize)]
struct MoveRequest {
    #[serde(default)]
    source: String,
    #[serde(default)]
    destination: String,
}

#[derive(Debug, Default, Deserialize)]
struct ListDirRequest {
    #[serde(default)]
    path: String,
    #[serde(default)]
    depth: u32,
}

/// `POST /filesystem.Filesystem/{method}` for the unary methods.
pub async fn call(
    State(state): State<AppState>,
    Path(method): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let Some(id) = super::sandbox_id(&headers).map(str::to_string) else {
        return unary_error(&E2bError::InvalidArgument(
            "E2b-Sandbox-Id is missing".into(),
        ));
    };
    let result = async {
        // Relative paths resolve against the home of the user the call names (the guard
        // refused an unknown one).
        let user = super::auth::user_from_headers(&headers)?;
        let body = read_body(body, MAX_MESSAGE).await?;
        match method.as_str() {
            "Stat" => stat(&state, &id, user, parse_unary(&headers, &body)?).await,
            "MakeDir" => make_dir(&state, &id, user, parse_unary(&headers, &body)?).await,
            "Move" => rename(&state, &id, user, parse_unary(&headers, &body)?).await,
            "ListDir" => list_dir(&state, &id, user, parse_unary(&headers, &body)?).await,
            "Remove" => remove(&state, &id, user, parse_unary(&headers, &body)?).await,
            other => Err(E2bError::Unimplemented(format!(
                "filesystem.Filesystem/{other} is not a method airlock serves"
            ))),
        }
    }
    .await;
    match result {
        Ok(v) => unary_ok(&v),
        Err(e) => unary_error(&e),
    }
}

fn required(user: E2bUser, path: &str, what: &str) -> Result<String, E2bError> {
    if path.is_empty() {
        return Err(E2bError::InvalidArgument(format!(
            "{what} is empty; give a path"
        )));
    }
    resolve_path_as(user, path)
}

async fn stat(
    state: &AppState,
    id: &str,
    user: E2bUser,
    req: PathRequest,
) -> Result<Value, E2bError> {
    let path = required(user, &req.path, "path")?;
    let entry = with_session(state, id, move |s| {
        let entry = s.stat(&path)?;
        Ok(described(s, entry))
    })
    .await?;
    Ok(json!({ "entry": entry_info(&entry) }))
}

/// An entry as envd describes it: a symlink has its final target's type and metadata, and its
/// target is the absolute path it resolves to (lexically: `..` after a symlinked directory is
/// taken as written). A dangling or looping link stays a symlink with the path it names.
pub fn described(s: &mut AgentChannel, entry: Entry) -> Entry {
    if entry.kind != EntryKind::Symlink {
        return entry;
    }
    let mut at = entry.path.clone();
    let mut current = entry.clone();
    for _ in 0..MAX_SYMLINK_HOPS {
        let Some(target) = current.target.as_deref() else {
            break;
        };
        at = joined(&at, target);
        match s.stat(&at) {
            Ok(next) if next.kind == EntryKind::Symlink => current = next,
            Ok(next) => {
                return Entry {
                    kind: next.kind,
                    mode: next.mode,
                    xattrs: next.xattrs,
                    target: Some(at),
                    ..entry
                }
            }
            Err(_) => break,
        }
    }
    Entry {
        target: Some(at),
        ..entry
    }
}

/// `target` (a symlink's content) resolved against the directory of the link at `link`, with
/// `.` and `..` removed.
fn joined(link: &str, target: &str) -> String {
    let base = if target.starts_with('/') {
        String::new()
    } else {
        link.rsplit_once('/')
            .map(|(d, _)| d)
            .unwrap_or("")
            .to_string()
    };
    let mut parts: Vec<&str> = Vec::new();
    for part in base.split('/').chain(target.split('/')) {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            p => parts.push(p),
        }
    }
    format!("/{}", parts.join("/"))
}

async fn make_dir(
    state: &AppState,
    id: &str,
    user: E2bUser,
    req: PathRequest,
) -> Result<Value, E2bError> {
    let path = required(user, &req.path, "path")?;
    let entry = with_session(state, id, move |s| {
        match s.stat(&path) {
            Ok(_) => return Err(E2bError::AlreadyExists(format!("{path} already exists"))),
            Err(e) => match E2bError::from(e) {
                E2bError::NotFound(_) => {}
                other => return Err(other),
            },
        }
        s.make_dir(&path, true)?;
        Ok(s.stat(&path)?)
    })
    .await?;
    Ok(json!({ "entry": entry_info(&entry) }))
}

async fn rename(
    state: &AppState,
    id: &str,
    user: E2bUser,
    req: MoveRequest,
) -> Result<Value, E2bError> {
    let from = required(user, &req.source, "source")?;
    let to = required(user, &req.destination, "destination")?;
    let entry = with_session(state, id, move |s| {
        s.rename(&from, &to)?;
        Ok(s.stat(&to)?)
    })
    .await?;
    Ok(json!({ "entry": entry_info(&entry) }))
}

async fn list_dir(
    state: &AppState,
    id: &str,
    user: E2bUser,
    req: ListDirRequest,
) -> Result<Value, E2bError> {
    let path = required(user, &req.path, "path")?;
    let depth = req.depth.max(1);
    if depth > MAX_LIST_DEPTH {
        return Err(E2bError::InvalidArgument(format!(
            "depth {depth} is too deep; the most is {MAX_LIST_DEPTH}"
        )));
    }
    let entries = with_session(state, id, move |s| {
        let top = s.stat(&path)?;
        if top.kind != EntryKind::Dir {
            return Err(E2bError::InvalidArgument(format!(
                "{path} is not a directory"
            )));
        }
        let entries = s.list_dir(&path, depth)?;
        Ok(entries
            .into_iter()
            .map(|e| described(s, e))
            .collect::<Vec<_>>())
    })
    .await?;
    Ok(json!({ "entries": entries.iter().map(entry_info).collect::<Vec<_>>() }))
}

async fn remove(
    state: &AppState,
    id: &str,
    user: E2bUser,
    req: PathRequest,
) -> Result<Value, E2bError> {
    let path = required(user, &req.path, "path")?;
    // As envd (Go's `os.RemoveAll`): removing what is not there succeeds.
    with_session(state, id, move |s| {
        match s.stat(&path).map_err(E2bError::from) {
            Ok(_) => Ok(s.remove(&path, true)?),
            Err(E2bError::NotFound(_)) => Ok(()),
            Err(e) => Err(e),
        }
    })
    .await?;
    Ok(json!({}))
}

/// An entry as proto3-JSON `EntryInfo`: default values omitted, `size` as a string, the type
/// as its enum name, `mode` the permission bits (envd's `Mode().Perm()`: a directory's
/// `0o755` is 493), `permissions` as Go prints a mode, `metadata` the `user.e2b.*` extended
/// attributes without their prefix. Owner and group are the box's names for the ids (`user`,
/// `root`; other ids as numbers).
pub fn entry_info(e: &Entry) -> Value {
    let (type_name, type_char) = match e.kind {
        EntryKind::File => (Some("FILE_TYPE_FILE"), '-'),
        EntryKind::Dir => (Some("FILE_TYPE_DIRECTORY"), 'd'),
        EntryKind::Symlink => (Some("FILE_TYPE_SYMLINK"), 'L'),
        EntryKind::Other => (None, '?'),
    };
    let perm = e.mode & 0o777;
    let mut map = Map::new();
    map.insert("name".into(), json!(e.name));
    if let Some(t) = type_name {
        map.insert("type".into(), json!(t));
    }
    map.insert("path".into(), json!(e.path));
    if e.size != 0 {
        map.insert("size".into(), json!(e.size.to_string()));
    }
    if perm != 0 {
        map.insert("mode".into(), json!(perm));
    }
    map.insert("permissions".into(), json!(permissions(type_char, perm)));
    map.insert("owner".into(), json!(id_name(e.uid)));
    map.insert("group".into(), json!(id_name(e.gid)));
    map.insert("modifiedTime".into(), json!(rfc3339_secs(e.mtime)));
    if let Some(target) = &e.target {
        map.insert("symlinkTarget".into(), json!(target));
    }
    let metadata = file_metadata(&e.xattrs);
    if !metadata.is_empty() {
        map.insert("metadata".into(), json!(metadata));
    }
    Value::Object(map)
}

/// envd's file metadata: the `user.e2b.*` attributes, keyed without the prefix.
pub fn file_metadata(xattrs: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    xattrs
        .iter()
        .filter_map(|(k, v)| {
            k.strip_prefix(METADATA_XATTR_PREFIX)
                .filter(|k| !k.is_empty())
                .map(|k| (k.to_string(), v.clone()))
        })
        .collect()
}

/// The box's name of a user or group id: its one user (and group) is `user`, 0 is `root`.
fn id_name(id: u32) -> String {
    match id {
        airlock_policy::INSIDE_UID => "user".into(),
        0 => "root".into(),
        other => other.to_string(),
    }
}

/// `-rw-r--r--`-style permissions.
pub fn permissions(type_char: char, perm: u32) -> String {
    let mut s = String::with_capacity(10);
    s.push(type_char);
    for shift in [6, 3, 0] {
        let bits = (perm >> shift) & 7;
        s.push(if bits & 4 != 0 { 'r' } else { '-' });
        s.push(if bits & 2 != 0 { 'w' } else { '-' });
        s.push(if bits & 1 != 0 { 'x' } else { '-' });
    }
    s
}

#[cfg(test)]
#[path = "filesystem_tests.rs"]
mod tests;
