//! `GET /openapi.json`: the API described as OpenAPI 3 (hand-written; a unit test checks it
//! lists every route).

use axum::http::header;
use axum::response::IntoResponse;

/// The document.
pub const DOCUMENT: &str = include_str!("openapi.json");

pub async fn document() -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "application/json")], DOCUMENT)
}
