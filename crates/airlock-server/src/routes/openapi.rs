//! `GET /openapi.json`: the API described as OpenAPI 3 (hand-written; a unit test checks it
//! lists every route). The served copy is exact for this server: the create request's
//! `template` enum lists the templates it has (the built-in names, its aliases and its store).

use crate::state::AppState;
use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;

/// The document as written (built-in template names only).
pub const DOCUMENT: &str = include_str!("openapi.json");

/// [`DOCUMENT`] with the create request's `template` enum naming `templates` (and null).
pub fn with_templates(templates: &[String]) -> String {
    let Ok(mut doc) = serde_json::from_str::<serde_json::Value>(DOCUMENT) else {
        return DOCUMENT.to_string();
    };
    let field = doc
        .pointer_mut("/components/schemas/CreateRequest/properties/template/enum")
        .and_then(|v| v.as_array_mut());
    if let Some(values) = field {
        *values = templates
            .iter()
            .map(|t| serde_json::Value::String(t.clone()))
            .chain([serde_json::Value::Null])
            .collect();
    }
    serde_json::to_string_pretty(&doc).unwrap_or_else(|_| DOCUMENT.to_string())
}

pub async fn document(State(state): State<AppState>) -> impl IntoResponse {
    let names = state.templates.known(crate::template::BUILTIN);
    (
        [(header::CONTENT_TYPE, "application/json")],
        with_templates(&names),
    )
}
