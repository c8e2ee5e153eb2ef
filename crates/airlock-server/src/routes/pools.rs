//! `GET /v1/pools`: each warm pool's size, ready boxes and hit/miss counters.

use crate::auth::require_key;
use crate::pools::PoolsView;
use crate::state::AppState;
use crate::ApiError;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::Json;

/// `GET /v1/pools`.
pub async fn list(
    State(state): State<AppState>,
    headers: HeaderMap,
) -> Result<Json<PoolsView>, ApiError> {
    require_key(&state, &headers)?;
    Ok(Json(state.manager.factory().pools().view()))
}
