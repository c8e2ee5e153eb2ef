//! envd's `/files`: download (`GET`, the raw bytes) and upload (`POST`, multipart with one
//! `file` part per file whose filename is the target path, or `application/octet-stream` with
//! `?path=`, optionally gzip-encoded). Authorised by the sandbox's access token or by a signed
//! URL ([`super::auth::check_signature`]). Bytes stream through a short bounded channel in
//! both directions; a whole file is never held in memory. Errors are `{"code", "message"}`
//! with 400 (bad request, a directory), 401 (credentials, unknown user), 404, 502 (sandbox
//! gone) or 507 (no space left).

use super::auth::{
    check_signature, require_token, resolve_path_as, user_from_headers, user_named, E2bUser,
    SignedRequest,
};
use super::boxio::with_box_blocking;
use super::error::E2bError;
use super::filesystem::{file_metadata, METADATA_XATTR_PREFIX};
use crate::state::AppState;
use airlock_protocol::EntryKind;
use axum::body::Bytes;
use axum::extract::{FromRequest, Multipart, Request, State};
use axum::http::{header, HeaderMap};
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt;
use serde::Deserialize;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use tokio::sync::mpsc;

/// Chunks buffered in either direction.
const CHUNKS_BUFFERED: usize = 8;
/// Most files one upload may carry.
const MAX_FILES: usize = 1000;
/// The header prefix of file metadata on an upload (header names arrive lowercased).
const METADATA_HEADER_PREFIX: &str = "x-metadata-";

#[derive(Debug, Default, Deserialize)]
struct FilesQuery {
    path: Option<String>,
    username: Option<String>,
    signature: Option<String>,
    signature_expiration: Option<i64>,
}

fn now_s() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

/// Who may do `operation` ("read" or "write"): the sandbox the request is for, and the user
/// it names (relative paths resolve against that user's home).
fn authorise(
    state: &AppState,
    headers: &HeaderMap,
    q: &FilesQuery,
    operation: &str,
) -> Result<(String, E2bUser), E2bError> {
    let named = super::sandbox_id(headers);
    let user = match q.username.as_deref() {
        Some(user) => user_named(Some(user))?,
        None => user_from_headers(headers)?,
    };
    if let Some(signature) = q.signature.as_deref() {
        let path = q
            .path
            .as_deref()
            .ok_or_else(|| E2bError::InvalidArgument("a signed URL needs ?path=".into()))?;
        let req = SignedRequest {
            path,
            operation,
            user: q.username.as_deref().unwrap_or(""),
            signature,
            expiration: q.signature_expiration,
        };
        return check_signature(&state.e2b, &req, named, now_s()).map(|id| (id, user));
    }
    let id = named.ok_or_else(|| {
        E2bError::Unauthenticated(format!(
            "{} (send E2b-Sandbox-Id and X-Access-Token, or use a signed URL)",
            super::auth::ENVD_MISSING_SIGNATURE
        ))
    })?;
    require_token(&state.e2b, headers, id)?;
    Ok((id.to_string(), user))
}

fn query(raw: Option<&str>) -> Result<FilesQuery, E2bError> {
    serde_urlencoded::from_str(raw.unwrap_or(""))
        .map_err(|e| E2bError::InvalidArgument(format!("the query string is malformed: {e}")))
}

/// A write error as envd reports it: "no space left" is 507.
fn files_error(e: &E2bError) -> Response {
    if e.to_string().to_ascii_lowercase().contains("no space left") {
        let body = json!({"code": 507, "message": e.to_string()});
        return (
            axum::http::StatusCode::INSUFFICIENT_STORAGE,
            axum::Json(body),
        )
            .into_response();
    }
    e.rest_response()
}

/// `GET /files?path=`: the file's bytes.
pub async fn download(State(state): State<AppState>, headers: HeaderMap, req: Request) -> Response {
    match download_inner(state, headers, req.uri().query()).await {
        Ok(r) => r,
        Err(e) => files_error(&e),
    }
}

async fn download_inner(
    state: AppState,
    headers: HeaderMap,
    raw: Option<&str>,
) -> Result<Response, E2bError> {
    let q = query(raw)?;
    let (id, user) = authorise(&state, &headers, &q, "read")?;
    let path = resolve_path_as(
        user,
        q.path
            .as_deref()
            .filter(|p| !p.is_empty())
            .ok_or_else(|| E2bError::InvalidArgument("give ?path= the file to read".into()))?,
    )?;
    let body = crate::transfer::stream_out(
        move |out| {
            let mut session = with_box_blocking(&state, &id, |h| Ok(h.sandbox().new_channel()))?;
            if session.stat(&path)?.kind == EntryKind::Dir {
                return Err(E2bError::InvalidArgument(format!(
                    "{path} is a directory; read a file, or list the directory"
                )));
            }
            Ok(session.read_file_to(&path, out)?)
        },
        || E2bError::Internal("the file's reader ended without a word; retry".into()),
    )
    .await?;
    Ok(([(header::CONTENT_TYPE, "application/octet-stream")], body).into_response())
}

/// A file being written into the box: send its bytes with [`FileWriter::send`], then
/// [`FileWriter::finish`].
struct FileWriter {
    tx: Option<mpsc::Sender<Result<Bytes, std::io::Error>>>,
    task: tokio::task::JoinHandle<Result<u64, E2bError>>,
}

impl FileWriter {
    /// Starts writing `path` (its missing parent directories are created), gunzipping the
    /// bytes when `gzip`; once written, the file gets the extended attributes `xattrs`.
    fn open(
        state: &AppState,
        id: &str,
        path: String,
        gzip: bool,
        xattrs: BTreeMap<String, String>,
    ) -> FileWriter {
        let (tx, rx) = mpsc::channel(CHUNKS_BUFFERED);
        let (state, id) = (state.clone(), id.to_string());
        let task = tokio::task::spawn_blocking(move || {
            with_box_blocking(&state, &id, |h| Ok(h.sandbox().new_channel())).and_then(
                |mut session| {
                    if let Some(parent) = std::path::Path::new(&path)
                        .parent()
                        .and_then(|p| p.to_str())
                        .filter(|p| !p.is_empty() && *p != "/")
                    {
                        session.make_dir(parent, true)?;
                    }
                    let mut reader = crate::transfer::ChunkReader::new(rx);
                    let written = if gzip {
                        session.write_file_from(&path, &mut flate2::read::GzDecoder::new(reader))
                    } else {
                        session.write_file_from(&path, &mut reader)
                    }?;
                    if !xattrs.is_empty() {
                        session.set_xattrs(&path, &xattrs).map_err(metadata_error)?;
                    }
                    Ok(written)
                },
            )
        });
        FileWriter { tx: Some(tx), task }
    }

    /// Sends a chunk; false if the writer has stopped (its error comes from `finish`).
    async fn send(&mut self, chunk: Result<Bytes, std::io::Error>) -> bool {
        match &self.tx {
            Some(tx) => tx.send(chunk).await.is_ok(),
            None => false,
        }
    }

    async fn finish(mut self) -> Result<u64, E2bError> {
        self.tx.take();
        self.task
            .await
            .map_err(|_| E2bError::Internal("the file's writer failed; retry".into()))?
    }
}

/// envd's `WriteInfo` of a written file, with the metadata it was given.
fn written(path: &str, metadata: &BTreeMap<String, String>) -> Value {
    let name = path.rsplit('/').next().unwrap_or(path);
    let mut info = json!({"path": path, "name": name, "type": "file"});
    let metadata = file_metadata(metadata);
    if !metadata.is_empty() {
        info["metadata"] = json!(metadata);
    }
    info
}

/// The file metadata an upload carries (`X-Metadata-<key>: <value>` headers, as envd ≥ 0.6.2
/// reads them) as the extended attributes it becomes: `user.e2b.<key>`, the key lowercased.
/// A value that is not printable US-ASCII, or more or larger attributes than a box takes,
/// is refused naming the header.
pub fn upload_metadata(headers: &HeaderMap) -> Result<BTreeMap<String, String>, E2bError> {
    let mut xattrs = BTreeMap::new();
    for (name, value) in headers {
        let Some(key) = name.as_str().strip_prefix(METADATA_HEADER_PREFIX) else {
            continue;
        };
        if key.is_empty() {
            return Err(E2bError::InvalidArgument(format!(
                "the header {METADATA_HEADER_PREFIX} names no metadata key; \
                 send {METADATA_HEADER_PREFIX}<key>: <value>"
            )));
        }
        let value = value
            .to_str()
            .ok()
            .filter(|v| v.bytes().all(|b| (0x20..0x7f).contains(&b)))
            .ok_or_else(|| {
                E2bError::InvalidArgument(format!(
                    "the metadata value of {key:?} must be printable US-ASCII"
                ))
            })?;
        xattrs.insert(
            format!("{METADATA_XATTR_PREFIX}{}", key.to_ascii_lowercase()),
            value.to_string(),
        );
    }
    airlock_protocol::check_xattrs(&xattrs)
        .map_err(|why| E2bError::InvalidArgument(format!("the file metadata is refused: {why}")))?;
    Ok(xattrs)
}

/// Setting the metadata failed: a file system without user extended attributes says so.
fn metadata_error(e: airlock_runtime::SandboxError) -> E2bError {
    match E2bError::from(e) {
        E2bError::Unimplemented(why) => E2bError::FailedPrecondition(format!(
            "the file was written but its metadata was not: the box's file system keeps no \
             user extended attributes there ({why})"
        )),
        other => other,
    }
}

/// `POST /files`: writes one or more files; answers the list of files written.
pub async fn upload(State(state): State<AppState>, headers: HeaderMap, req: Request) -> Response {
    match upload_inner(state, headers, req).await {
        Ok(r) => r,
        // A refused upload may leave its body unread: the connection is not reusable.
        Err(e) => super::connect::closing(files_error(&e)),
    }
}

async fn upload_inner(
    state: AppState,
    headers: HeaderMap,
    req: Request,
) -> Result<Response, E2bError> {
    let q = query(req.uri().query())?;
    let (id, user) = authorise(&state, &headers, &q, "write")?;
    let metadata = upload_metadata(&headers)?;
    let media = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_ascii_lowercase();
    let mut done = Vec::new();
    if media.starts_with("multipart/form-data") {
        let mut form = Multipart::from_request(req, &()).await.map_err(|e| {
            E2bError::InvalidArgument(format!("the multipart body is malformed: {e}"))
        })?;
        loop {
            let field = form.next_field().await.map_err(|e| {
                E2bError::InvalidArgument(format!("the multipart body is malformed: {e}"))
            })?;
            let Some(mut field) = field else { break };
            if field.name() != Some("file") {
                continue;
            }
            if done.len() >= MAX_FILES {
                return Err(E2bError::InvalidArgument(format!(
                    "one upload may carry at most {MAX_FILES} files"
                )));
            }
            let target = match (q.path.as_deref(), field.file_name()) {
                (Some(p), _) if !p.is_empty() => p.to_string(),
                (_, Some(f)) if !f.is_empty() => f.to_string(),
                _ => {
                    return Err(E2bError::InvalidArgument(
                        "a file part needs a filename (the target path) or ?path=".into(),
                    ))
                }
            };
            let path = resolve_path_as(user, &target)?;
            let mut writer = FileWriter::open(&state, &id, path.clone(), false, metadata.clone());
            loop {
                let chunk = field.chunk().await;
                let (chunk, end) = match chunk {
                    Ok(Some(b)) => (Ok(b), false),
                    Ok(None) => break,
                    Err(e) => (
                        Err(std::io::Error::other(format!("the upload broke off: {e}"))),
                        true,
                    ),
                };
                if !writer.send(chunk).await || end {
                    break;
                }
            }
            writer.finish().await?;
            done.push(written(&path, &metadata));
        }
    } else {
        let target = q
            .path
            .as_deref()
            .filter(|p| !p.is_empty())
            .ok_or_else(|| E2bError::InvalidArgument("give ?path= the file to write".into()))?;
        let path = resolve_path_as(user, target)?;
        let gzip = headers
            .get(header::CONTENT_ENCODING)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("gzip"));
        let mut writer = FileWriter::open(&state, &id, path.clone(), gzip, metadata.clone());
        let mut chunks = req.into_body().into_data_stream();
        while let Some(chunk) = chunks.next().await {
            let failed = chunk.is_err();
            let chunk =
                chunk.map_err(|e| std::io::Error::other(format!("the upload broke off: {e}")));
            if !writer.send(chunk).await || failed {
                break;
            }
        }
        writer.finish().await?;
        done.push(written(&path, &metadata));
    }
    if done.is_empty() {
        return Err(E2bError::InvalidArgument(
            "the upload carries no part named `file`".into(),
        ));
    }
    Ok(axum::Json(done).into_response())
}
