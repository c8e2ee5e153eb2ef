//! Code interpreter contexts below both APIs: finding or starting a context in a box, running
//! code in it, and creating, restarting and deleting contexts. The native `/code` routes and
//! E2B's interpreter (port 49999) call these.

use crate::factory::{BoxHandle, ContextRun, LiveContext};
use crate::state::AppState;
use crate::ApiError;
use airlock_runtime::{CodeEvent, Language, SandboxError};
use std::sync::{Arc, PoisonError};
use std::time::Duration;

/// A language's name in the API.
pub(crate) fn language_name(l: Language) -> &'static str {
    match l {
        Language::Python => "python",
        Language::JavaScript => "js",
        Language::TypeScript => "ts",
        Language::Bash => "bash",
    }
}

pub(crate) fn language_of(name: Option<&str>) -> Result<Language, ApiError> {
    match name.unwrap_or("python") {
        "python" => Ok(Language::Python),
        "js" | "javascript" => Ok(Language::JavaScript),
        "ts" | "typescript" => Ok(Language::TypeScript),
        "bash" => Ok(Language::Bash),
        other => Err(crate::checks::FieldError::new(
            "language",
            format!("use \"python\", \"js\" (or \"javascript\"), \"ts\" (or \"typescript\") or \"bash\", not {other:?}"),
        )
        .into()),
    }
}

/// The language whose default context has this id, if it is one.
pub(crate) fn default_language(ctx: &str) -> Option<Language> {
    [
        Language::Python,
        Language::JavaScript,
        Language::TypeScript,
        Language::Bash,
    ]
    .into_iter()
    .find(|l| language_name(*l) == ctx)
}

/// Context `ctx_id` of the box (a default context is started on first use); checks that its
/// language is `language` when one was asked for.
fn ensure_context(
    h: &mut BoxHandle,
    ctx_id: &str,
    language: Option<Language>,
) -> Result<Arc<LiveContext>, ApiError> {
    let (sandbox, contexts) = h.parts();
    if let Some(live) = contexts.get(ctx_id) {
        return match language {
            Some(l) if l != live.language => Err(ApiError::Invalid(format!(
                "context {ctx_id} runs {}, not {}; leave out \"language\" or pick another context",
                language_name(live.language),
                language_name(l)
            ))),
            _ => Ok(Arc::clone(live)),
        };
    }
    let Some(default) = default_language(ctx_id) else {
        return Err(ApiError::NotFound(format!("no context {ctx_id} in this sandbox; create it with POST /v1/sandboxes/{{id}}/contexts")));
    };
    if let Some(l) = language.filter(|l| *l != default) {
        return Err(ApiError::Invalid(format!(
            "context {ctx_id} is the default {ctx_id} context, not {}",
            language_name(l)
        )));
    }
    let live = LiveContext::start(sandbox, default, None).map_err(ApiError::from_box)?;
    contexts.insert(ctx_id.to_string(), Arc::clone(&live));
    Ok(live)
}

/// Runs `code` in context `ctx_id` of box `id` (a default context is started on first use),
/// calling `on_started` once the context is ready and `on_event` for each event (answering
/// `false`, or `wanted` answering `false`, interrupts the execution). The box's handle is held
/// only to find the context: the execution runs on the context's own session, so the box stays
/// usable and killable meanwhile; executions in one context take turns. A context that died,
/// or whose stream got out of step, is dropped (the next call starts afresh). The outer error:
/// the context could not be had; the inner one: the execution failed.
#[allow(clippy::too_many_arguments)]
pub(crate) fn run_in_context(
    state: &AppState,
    id: &str,
    ctx_id: &str,
    language: Option<Language>,
    code: &str,
    env: &std::collections::BTreeMap<String, String>,
    timeout: Option<Duration>,
    on_started: impl FnOnce(),
    on_event: impl FnMut(&CodeEvent) -> bool,
    wanted: impl Fn() -> bool,
) -> Result<Result<airlock_runtime::CodeEnd, SandboxError>, ApiError> {
    let live = state
        .manager
        .with_handle(id, |h| ensure_context(h, ctx_id, language))
        .map_err(|e| state.manager_error(id, e))??;
    let _working = state.working(id);
    let mut run = live.run.lock().unwrap_or_else(PoisonError::into_inner);
    on_started();
    let ContextRun { session, ctx } = &mut *run;
    let ran = session.run_code_while(ctx, code, env, timeout, on_event, wanted);
    drop(run);
    if ran.is_err() {
        // Forget it and end its process; the box may be gone.
        // (A context that was restarted or deleted meanwhile was ended by whoever did that.)
        let _ = state.manager.with_handle(id, |h| {
            let (sandbox, contexts) = h.parts();
            if contexts.get(ctx_id).is_some_and(|c| Arc::ptr_eq(c, &live)) {
                contexts.remove(ctx_id);
                live.kill(sandbox);
            }
        });
    }
    Ok(ran)
}

/// Creates a context with a fresh id in a box; returns its id.
pub(crate) fn create_in(
    h: &mut BoxHandle,
    language: Language,
    cwd: Option<String>,
) -> Result<String, ApiError> {
    let ctx_id = h.new_context_id();
    let (sandbox, contexts) = h.parts();
    let shown = cwd.clone();
    let live = LiveContext::start(sandbox, language, cwd).map_err(|e| {
        match (ApiError::from_box(e), shown) {
            (ApiError::NotFound(msg), Some(cwd)) => ApiError::NotFound(format!(
                "the context's cwd {cwd:?} is not a directory in the sandbox ({msg}); create it first or pick another"
            )),
            (other, _) => other,
        }
    })?;
    contexts.insert(ctx_id.clone(), live);
    Ok(ctx_id)
}

/// Restarts context `ctx_id` (a new process under the same id, same language and directory;
/// its state is gone, an execution running in it ends); a default context not started yet is
/// started. Returns its language.
pub(crate) fn restart_in(h: &mut BoxHandle, ctx_id: &str) -> Result<Language, ApiError> {
    let (sandbox, contexts) = h.parts();
    let (language, cwd) = match contexts.remove(ctx_id) {
        Some(old) => {
            // Best effort: the old process may already be dead.
            old.kill(sandbox);
            (old.language, old.cwd.clone())
        }
        None => match default_language(ctx_id) {
            Some(l) => (l, None),
            None => {
                return Err(ApiError::NotFound(format!(
                    "no context {ctx_id} in this sandbox"
                )))
            }
        },
    };
    let live = LiveContext::start(sandbox, language, cwd).map_err(ApiError::from_box)?;
    contexts.insert(ctx_id.to_string(), live);
    Ok(language)
}

/// Ends context `ctx_id`'s process and forgets it.
pub(crate) fn delete_in(h: &mut BoxHandle, ctx_id: &str) -> Result<(), ApiError> {
    let (sandbox, contexts) = h.parts();
    let Some(old) = contexts.remove(ctx_id) else {
        return Err(ApiError::NotFound(format!(
            "no context {ctx_id} in this sandbox"
        )));
    };
    // The context is gone from the map either way; a process already dead is fine.
    old.kill(sandbox);
    Ok(())
}
