//! E2B's Template SDK (`Template.build`, `exists`, tags) on airlock's templates: the build
//! routes the SDKs call, in E2B's shapes, each behind the E2B API key (`X-API-KEY`, as both
//! SDKs send it); the upload URL they hand out is this server's own and carries a one-use
//! token instead. A build's steps become a template spec ([`steps`]) built by airlock's own
//! builder ([`builds`]); names and tags are template store names ([`names`]).

pub(crate) mod archive;
pub(crate) mod builds;
pub(crate) mod names;
pub(crate) mod steps;
pub(crate) mod uploads;

use super::auth::require_api_key;
use super::error::E2bError;
use crate::state::AppState;
use axum::body::{Body, Bytes};
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, put};
use axum::{Json, Router};
use futures_util::StreamExt;
use serde::Deserialize;
use std::io::Write;
use std::path::PathBuf;

/// The default cap on one upload (`--template-upload-max`).
pub const DEFAULT_MAX_UPLOAD: u64 = 1 << 30;
/// How many times an upload's cap its files may unpack to.
const UNPACK_FACTOR: u64 = 4;
/// Log lines per status answer (E2B's page size; the SDKs ask again until none come).
const LOG_PAGE: usize = 100;

/// What builds need from the server.
#[derive(Debug, Clone)]
pub struct BuildSettings {
    /// The airlock executable (`airlock template build` runs the builder).
    pub airlock_exe: PathBuf,
    /// The server's data dir (its template store is under it).
    pub data_dir: PathBuf,
    /// The largest upload accepted, in bytes.
    pub max_upload: u64,
}

/// The template builds of a server.
#[derive(Debug)]
pub struct TemplateService {
    settings: Option<BuildSettings>,
    builds: builds::Builds,
    uploads: Option<uploads::Uploads>,
}

impl TemplateService {
    /// Builds with `settings`; `None`: the build routes answer that they are not served.
    pub fn new(settings: Option<BuildSettings>) -> TemplateService {
        let uploads = settings.as_ref().map(|s| {
            uploads::Uploads::new(
                s.data_dir.join("e2b-uploads"),
                s.max_upload.saturating_mul(uploads::KEPT_FACTOR),
            )
        });
        TemplateService {
            settings,
            builds: builds::Builds::default(),
            uploads,
        }
    }
}

/// The routes.
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/v3/templates", post(request_build))
        .route("/templates/{id}/files/{hash}", get(file_link))
        .route("/v2/templates/{id}/builds/{build}", post(trigger))
        .route("/templates/{id}/builds/{build}/status", get(status))
        .route("/templates/aliases/{alias}", get(alias))
        .route("/templates/tags", post(assign_tags).delete(remove_tags))
        .route("/templates/{id}/tags", get(tags))
        .route(
            "/e2b/template-uploads/{hash}",
            put(upload).layer(axum::extract::DefaultBodyLimit::disable()),
        )
}

fn parse<T: serde::de::DeserializeOwned>(body: &Bytes, what: &str) -> Result<T, E2bError> {
    serde_json::from_slice(body)
        .map_err(|e| E2bError::InvalidArgument(format!("the {what} body is not valid: {e}")))
}

struct Served<'a> {
    settings: &'a BuildSettings,
    uploads: &'a uploads::Uploads,
    store: airlock_template::TemplateStore,
}

fn served(state: &AppState) -> Result<Served<'_>, E2bError> {
    let t = &state.template_builds;
    match (&t.settings, &t.uploads, state.templates.store()) {
        (Some(settings), Some(uploads), Some(store)) => Ok(Served {
            settings,
            uploads,
            store: store.clone(),
        }),
        _ => Err(E2bError::Unimplemented(
            "template builds are not served here: `airlock serve` builds templates with its template store and the airlock executable".into(),
        )),
    }
}

fn random_uuid() -> Result<String, E2bError> {
    let hex = crate::secrets::random_hex(16)
        .map_err(|e| E2bError::Internal(format!("no randomness for a build id: {e}")))?;
    Ok(format!(
        "{}-{}-4{}-a{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[13..16],
        &hex[17..20],
        &hex[20..32]
    ))
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct BuildRequest {
    name: Option<String>,
    alias: Option<String>,
    #[serde(default)]
    tags: Vec<String>,
}

async fn request_build(State(state): State<AppState>, headers: HeaderMap, body: Bytes) -> Response {
    let answer = || -> Result<Response, E2bError> {
        require_api_key(&state.e2b, &headers)?;
        served(&state)?;
        let req: BuildRequest = parse(&body, "build request")?;
        let full = req.name.or(req.alias).ok_or_else(|| {
            E2bError::InvalidArgument("the build request names no template: give `name`".into())
        })?;
        let (name, tag) =
            names::split(&full).map_err(|e| E2bError::InvalidArgument(e.to_string()))?;
        for t in &req.tags {
            names::check_tag(t).map_err(|e| E2bError::InvalidArgument(e.to_string()))?;
        }
        let tags = names::build_tags(tag.as_deref(), &req.tags);
        let id = random_uuid()?;
        let build = state
            .template_builds
            .builds
            .add(id.clone(), name.clone(), tags.clone());
        build.log(
            "info",
            &format!("[airlock] build {id} of {name} ({})", tags.join(", ")),
        );
        let doc = serde_json::json!({
            "templateID": name, "buildID": id, "public": false,
            "names": [name], "tags": tags, "aliases": [name],
        });
        Ok((StatusCode::ACCEPTED, Json(doc)).into_response())
    };
    answer().unwrap_or_else(|e| e.rest_response())
}

async fn file_link(
    State(state): State<AppState>,
    Path((_id, hash)): Path<(String, String)>,
    headers: HeaderMap,
) -> Response {
    let answer = || -> Result<Response, E2bError> {
        require_api_key(&state.e2b, &headers)?;
        let s = served(&state)?;
        if !uploads::valid_hash(&hash) {
            return Err(E2bError::InvalidArgument(format!(
                "{hash:?} is not a files hash (64 hex digits)"
            )));
        }
        if s.uploads.checked(&hash).is_file() {
            s.uploads.touch(&hash);
            return Ok((
                StatusCode::CREATED,
                Json(serde_json::json!({"present": true})),
            )
                .into_response());
        }
        let host = headers
            .get(axum::http::header::HOST)
            .and_then(|h| h.to_str().ok())
            .ok_or_else(|| E2bError::InvalidArgument("the request has no Host header".into()))?;
        let token = crate::secrets::random_hex(24)
            .map_err(|e| E2bError::Internal(format!("no randomness for an upload URL: {e}")))?;
        s.uploads.grant(&hash, token.clone());
        let url = format!(
            "http://{host}/e2b/template-uploads/{}?token={token}",
            hash.to_ascii_lowercase()
        );
        Ok((
            StatusCode::CREATED,
            Json(serde_json::json!({"present": false, "url": url})),
        )
            .into_response())
    };
    answer().unwrap_or_else(|e| e.rest_response())
}

#[derive(Debug, Deserialize)]
struct UploadQuery {
    token: Option<String>,
}

fn too_large(max: u64) -> Response {
    let body = serde_json::json!({"code": 413, "message": format!(
        "the upload is larger than this server accepts ({max} bytes, `airlock serve --template-upload-max`); copy fewer or smaller files"
    )});
    (StatusCode::PAYLOAD_TOO_LARGE, Json(body)).into_response()
}

async fn upload(
    State(state): State<AppState>,
    Path(hash): Path<String>,
    Query(q): Query<UploadQuery>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let s = match served(&state) {
        Ok(s) => s,
        Err(e) => return e.rest_response(),
    };
    let max = s.settings.max_upload;
    if !uploads::valid_hash(&hash) || !s.uploads.take(&hash, q.token.as_deref().unwrap_or("")) {
        return E2bError::PermissionDenied(
            "this upload URL is not valid (each is for one upload of one files hash, within an hour): ask the file-link route for a new one".into(),
        )
        .rest_response();
    }
    let declared = headers
        .get(axum::http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > max) {
        return too_large(max);
    }
    let want = declared.unwrap_or(max);
    let _reserved = match s.uploads.reserve(want) {
        Ok(r) => r,
        Err(full) => {
            return E2bError::ResourceExhausted(format!(
                "uploads streaming in now hold {} of the {} bytes this server keeps for template build files (four times `airlock serve --template-upload-max`); retry when they finish",
                full.streaming, full.budget
            ))
            .rest_response()
        }
    };
    let dir = s.uploads.dir().to_path_buf();
    let done = s.uploads.unchecked(&hash);
    // Named by its URL's token: two uploads of one hash never share a partial file.
    let token = q.token.as_deref().unwrap_or("");
    let partial = dir.join(format!("{hash}.partial-{}", &token[..token.len().min(16)]));
    let file = std::fs::create_dir_all(&dir).and_then(|_| std::fs::File::create(&partial));
    let mut file = match file {
        Ok(f) => f,
        Err(e) => {
            return E2bError::Internal(format!("cannot store the upload: {e}")).rest_response()
        }
    };
    let mut stream = body.into_data_stream();
    let mut written = 0u64;
    while let Some(chunk) = stream.next().await {
        let failed = |e: String| {
            let _ = std::fs::remove_file(&partial);
            E2bError::InvalidArgument(format!("the upload broke off: {e}")).rest_response()
        };
        let chunk = match chunk {
            Ok(c) => c,
            Err(e) => return failed(e.to_string()),
        };
        written += chunk.len() as u64;
        if written > want {
            let _ = std::fs::remove_file(&partial);
            if written <= max {
                return E2bError::InvalidArgument(format!(
                    "the upload is longer than its Content-Length ({want} bytes)"
                ))
                .rest_response();
            }
            return too_large(max);
        }
        if let Err(e) = file.write_all(&chunk) {
            return failed(e.to_string());
        }
    }
    if let Err(e) = std::fs::rename(&partial, &done) {
        let _ = std::fs::remove_file(&partial);
        return E2bError::Internal(format!("cannot store the upload: {e}")).rest_response();
    }
    StatusCode::OK.into_response()
}

async fn trigger(
    State(state): State<AppState>,
    Path((id, build_id)): Path<(String, String)>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let answer = async {
        require_api_key(&state.e2b, &headers)?;
        served(&state)?;
        let build = state
            .template_builds
            .builds
            .get(&id, &build_id)
            .ok_or_else(|| {
                E2bError::NotFound(format!("template {id:?} has no build {build_id:?}"))
            })?;
        let start: steps::BuildStart = parse(&body, "build")?;
        if !build.trigger() {
            return Err(E2bError::FailedPrecondition(format!(
                "build {build_id} was already started"
            )));
        }
        let st = state.clone();
        let b = std::sync::Arc::clone(&build);
        let prepared = tokio::task::spawn_blocking(move || prepare(&st, &b, &start))
            .await
            .map_err(|_| E2bError::Internal("the build's preparation failed".into()))?;
        let (job, store) = match prepared {
            Ok(p) => p,
            Err(e) => {
                if let Some(s) = &state.template_builds.settings {
                    let _ = std::fs::remove_dir_all(s.data_dir.join("e2b-builds").join(&build.id));
                }
                build.fail(e.to_string(), None);
                return Err(e);
            }
        };
        let lock = state.template_builds.builds.runner_lock();
        builds::spawn(build, job, store, lock)
            .map_err(|e| E2bError::Internal(format!("the build could not start: {e}")))?;
        Ok(StatusCode::ACCEPTED.into_response())
    };
    answer.await.unwrap_or_else(|e: E2bError| e.rest_response())
}

/// The build's spec and files, from its steps and their checked uploads.
fn prepare(
    state: &AppState,
    build: &builds::Build,
    start: &steps::BuildStart,
) -> Result<(builds::BuildJob, airlock_template::TemplateStore), E2bError> {
    let s = served(state)?;
    let stored = |name: &str| {
        let n = names::store_name_of(name);
        s.store.inspect(&n).ok().map(|_| n)
    };
    let plan = steps::plan(start, &stored).map_err(|e| match e {
        steps::PlanError::NotFound(m) => E2bError::NotFound(m),
        steps::PlanError::Unsupported(m) => E2bError::InvalidArgument(m),
    })?;
    let first_name = names::store_name(
        &build.template_id,
        build
            .tags
            .first()
            .map(String::as_str)
            .unwrap_or(names::LATEST),
    );
    let dir = s.settings.data_dir.join("e2b-builds").join(&build.id);
    let files = dir.join("files");
    std::fs::create_dir_all(&files)
        .map_err(|e| E2bError::Internal(format!("cannot make the build's directory: {e}")))?;
    let mut copies = Vec::new();
    let mut count = 0;
    for (n, c) in plan.copies().enumerate() {
        let checked = s.uploads.checked(&c.files_hash);
        let unchecked = s.uploads.unchecked(&c.files_hash);
        let path = match (checked.is_file(), unchecked.is_file()) {
            (true, _) => {
                s.uploads.touch(&c.files_hash);
                checked.clone()
            }
            (false, true) => unchecked.clone(),
            (false, false) => {
                return Err(E2bError::InvalidArgument(format!(
                    "COPY {} {}: its files (hash {}) were never uploaded; upload them to the URL the file-link route gives",
                    c.src, c.dest, c.files_hash
                )))
            }
        };
        let limit = s.settings.max_upload.saturating_mul(UNPACK_FACTOR);
        let entries = archive::read(
            &path,
            &files,
            count,
            (&c.src, &c.dest, &c.files_hash),
            limit,
        )
        .map_err(|e| {
            if matches!(
                e,
                archive::ArchiveError::HashMismatch { .. } | archive::ArchiveError::Entry { .. }
            ) {
                let _ = std::fs::remove_file(&path);
            }
            E2bError::InvalidArgument(format!("COPY {} {} (copy {}): {e}", c.src, c.dest, n + 1))
        })?;
        if path == unchecked {
            let _ = std::fs::rename(&unchecked, &checked);
        }
        count += entries.len();
        copies.push(entries);
    }
    let stored_base = match &plan.base {
        steps::Base::Stored(name) if plan.steps.is_empty() => Some(name.clone()),
        _ => {
            let (spec, _) = steps::render(&plan, &copies)
                .map_err(|e| E2bError::InvalidArgument(e.to_string()))?;
            std::fs::write(dir.join("spec.toml"), spec)
                .map_err(|e| E2bError::Internal(format!("cannot write the build's spec: {e}")))?;
            None
        }
    };
    build.log(
        "info",
        &format!(
            "[airlock] {} steps, base {:?}",
            start.steps.len(),
            plan.base
        ),
    );
    Ok((
        builds::BuildJob {
            airlock_exe: s.settings.airlock_exe.clone(),
            data_dir: s.settings.data_dir.clone(),
            dir,
            first_name,
            force: plan.force,
            start_cmd: plan.start_cmd.clone(),
            ready_cmd: plan.ready_cmd.clone(),
            stored_base,
        },
        s.store,
    ))
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct StatusQuery {
    logs_offset: Option<usize>,
    limit: Option<usize>,
}

async fn status(
    State(state): State<AppState>,
    Path((id, build_id)): Path<(String, String)>,
    Query(q): Query<StatusQuery>,
    headers: HeaderMap,
) -> Response {
    let answer = || -> Result<Response, E2bError> {
        require_api_key(&state.e2b, &headers)?;
        let build = state
            .template_builds
            .builds
            .get(&id, &build_id)
            .ok_or_else(|| {
                E2bError::NotFound(format!("template {id:?} has no build {build_id:?}"))
            })?;
        let limit = q.limit.unwrap_or(LOG_PAGE).clamp(1, LOG_PAGE);
        let v = build.view(q.logs_offset.unwrap_or(0), limit);
        let mut doc = serde_json::json!({
            "templateID": id, "buildID": build_id, "status": v.status.as_str(),
            "logs": v.logs.iter().map(|l| l.message.clone()).collect::<Vec<_>>(),
            "logEntries": v.logs.iter().map(builds::LogLine::json).collect::<Vec<_>>(),
        });
        if let Some(r) = v.reason {
            let mut reason = serde_json::json!({
                "message": r.message,
                "logEntries": r.lines.iter().map(builds::LogLine::json).collect::<Vec<_>>(),
            });
            if let Some(step) = r.step {
                reason["step"] = step.into();
            }
            doc["reason"] = reason;
        }
        Ok(Json(doc).into_response())
    };
    answer().unwrap_or_else(|e| e.rest_response())
}

async fn alias(
    State(state): State<AppState>,
    Path(alias): Path<String>,
    headers: HeaderMap,
) -> Response {
    off_thread(move || -> Result<Response, E2bError> {
        require_api_key(&state.e2b, &headers)?;
        let known = super::control::template(Some(&alias), &state.templates).is_ok()
            || super::control::template(Some(&names::store_name_of(&alias)), &state.templates)
                .is_ok();
        if !known {
            return Err(E2bError::NotFound(format!(
                "template {alias:?} does not exist"
            )));
        }
        let id = alias.split(':').next().unwrap_or(&alias);
        Ok(Json(serde_json::json!({"templateID": id, "public": false})).into_response())
    })
    .await
}

/// Runs a handler's store work (file reads and renames) on a blocking thread, not the
/// server's async workers.
async fn off_thread(f: impl FnOnce() -> Result<Response, E2bError> + Send + 'static) -> Response {
    match tokio::task::spawn_blocking(f).await {
        Ok(answer) => answer.unwrap_or_else(|e| e.rest_response()),
        Err(_) => E2bError::Internal("the request's worker failed; retry".into()).rest_response(),
    }
}

fn store_err(e: airlock_template::TemplateError) -> E2bError {
    match e {
        airlock_template::TemplateError::NotFound { .. } => E2bError::NotFound(e.to_string()),
        airlock_template::TemplateError::InUse { .. } => {
            E2bError::FailedPrecondition(e.to_string())
        }
        airlock_template::TemplateError::BadName(_) => E2bError::InvalidArgument(e.to_string()),
        other => E2bError::Internal(other.to_string()),
    }
}

#[derive(Debug, Deserialize)]
struct AssignTags {
    target: String,
    tags: Vec<String>,
}

async fn assign_tags(State(state): State<AppState>, headers: HeaderMap, body: Bytes) -> Response {
    off_thread(move || -> Result<Response, E2bError> {
        require_api_key(&state.e2b, &headers)?;
        let s = served(&state)?;
        let req: AssignTags = parse(&body, "tags")?;
        let (name, tag) =
            names::split(&req.target).map_err(|e| E2bError::InvalidArgument(e.to_string()))?;
        if req.tags.is_empty() {
            return Err(E2bError::InvalidArgument(
                "give at least one tag to assign".into(),
            ));
        }
        for t in &req.tags {
            names::check_tag(t).map_err(|e| E2bError::InvalidArgument(e.to_string()))?;
        }
        let source = names::store_name(&name, tag.as_deref().unwrap_or(names::LATEST));
        let from = s.store.inspect(&source).map_err(store_err)?;
        for t in &req.tags {
            s.store
                .name_as(&source, &names::store_name(&name, t))
                .map_err(store_err)?;
        }
        let doc = serde_json::json!({
            "tags": req.tags, "buildID": names::build_id_of_digest(&from.meta.digest),
        });
        Ok((StatusCode::CREATED, Json(doc)).into_response())
    })
    .await
}

#[derive(Debug, Deserialize)]
struct RemoveTags {
    name: String,
    tags: Vec<String>,
}

async fn remove_tags(State(state): State<AppState>, headers: HeaderMap, body: Bytes) -> Response {
    off_thread(move || -> Result<Response, E2bError> {
        require_api_key(&state.e2b, &headers)?;
        let s = served(&state)?;
        let req: RemoveTags = parse(&body, "tags")?;
        let (name, _) =
            names::split(&req.name).map_err(|e| E2bError::InvalidArgument(e.to_string()))?;
        for t in &req.tags {
            names::check_tag(t).map_err(|e| E2bError::InvalidArgument(e.to_string()))?;
            s.store
                .inspect(&names::store_name(&name, t))
                .map_err(store_err)?;
        }
        for t in &req.tags {
            s.store
                .remove(&names::store_name(&name, t))
                .map_err(store_err)?;
        }
        Ok(StatusCode::NO_CONTENT.into_response())
    })
    .await
}

async fn tags(
    State(state): State<AppState>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Response {
    off_thread(move || -> Result<Response, E2bError> {
        require_api_key(&state.e2b, &headers)?;
        let s = served(&state)?;
        let (name, _) = names::split(&id).map_err(|e| E2bError::InvalidArgument(e.to_string()))?;
        let mut out = Vec::new();
        for stored in s.store.names().map_err(store_err)? {
            let Some(tag) = names::tag_of(&stored, &name) else {
                continue;
            };
            let t = s.store.inspect(&stored).map_err(store_err)?;
            out.push(serde_json::json!({
                "tag": tag,
                "buildID": names::build_id_of_digest(&t.meta.digest),
                "createdAt": super::views::rfc3339_secs(i64::try_from(t.meta.created).unwrap_or(0)),
            }));
        }
        if out.is_empty() {
            return Err(E2bError::NotFound(format!(
                "template {name:?} does not exist"
            )));
        }
        Ok(Json(serde_json::Value::Array(out)).into_response())
    })
    .await
}
