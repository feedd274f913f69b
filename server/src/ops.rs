//! What orchestrators and monitoring read: `/health` (alive), `/ready`
//! (the database answers, migrations applied) and `/metrics` (Prometheus).
//! `/metrics` is served on the main listener only behind
//! `CA_METRICS_TOKEN`, and on `CA_METRICS_ADDR` when the operator names a
//! separate, private listen address.

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::json;

use crate::clock::Clock;
use crate::db::{self, Pool};
use crate::http::{ApiError, bearer_in};
use crate::secret::Secret;

/// What the operations routes need.
#[derive(Clone)]
pub struct OpsState {
    pub pool: Pool,
    pub clock: Clock,
    /// `CA_METRICS_TOKEN`: the bearer `/metrics` asks for; none serves no
    /// `/metrics` on the main listener.
    pub metrics_token: Option<Secret>,
}

/// `/health`, `/ready`, and `/metrics` when a token guards it.
pub fn router(state: OpsState) -> Router {
    let routes = Router::new().route("/health", get(|| async { "ok" })).route("/ready", get(ready));
    let routes = if state.metrics_token.is_some() { routes.route("/metrics", get(guarded_metrics)) } else { routes };
    routes.with_state(state)
}

/// The separate metrics listener (`CA_METRICS_ADDR`): `/metrics` only,
/// with the token too when one is set.
pub fn metrics_router(state: OpsState) -> Router {
    Router::new().route("/metrics", get(guarded_metrics)).with_state(state)
}

/// `GET /ready`: `200` once the database answers with every migration of
/// this build applied, else `503` (the cause is logged, never shown).
async fn ready(State(state): State<OpsState>) -> Response {
    match db::check_ready(&state.pool).await {
        Ok(()) => axum::Json(json!({ "status": "ready" })).into_response(),
        Err(error) => {
            tracing::warn!(%error, "not ready");
            let body = json!({ "error": "not ready to serve yet", "code": "not_ready" });
            (StatusCode::SERVICE_UNAVAILABLE, axum::Json(body)).into_response()
        }
    }
}

async fn guarded_metrics(State(state): State<OpsState>, headers: HeaderMap) -> Result<Response, ApiError> {
    if let Some(token) = &state.metrics_token
        && !bearer_in(&headers).is_some_and(|given| token.matches(given))
    {
        return Err(ApiError::Unauthorized);
    }
    Ok(metrics(&state).await)
}

/// The scrape: the database-wide gauges are read first, then everything
/// is rendered. A database that does not answer leaves them as they were.
async fn metrics(state: &OpsState) -> Response {
    match db::actions::count_open(&state.pool, state.clock.now_ms()).await {
        Ok(counts) => counts.into_iter().for_each(|(status, n)| crate::metrics::pending_actions(status, n)),
        Err(error) => tracing::warn!(error = format!("{error:#}"), "metrics: cannot count pending actions"),
    }
    match db::caddie::count_queued_reports(&state.pool).await {
        Ok(n) => crate::metrics::caddie_reports_queued(n),
        Err(error) => tracing::warn!(error = format!("{error:#}"), "metrics: cannot count queued reports"),
    }
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")], crate::metrics::render()).into_response()
}
