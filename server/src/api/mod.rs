//! The HTTP API (assistant-api.md): a router per resource, each taking
//! only [`ApiState`], the API's own part of the application's state; the
//! chat API's caller comes from the embed token (`state.rs`).

pub mod actions;
pub mod app_actions;
pub mod apps;
pub mod attachments;
pub mod audit;
pub mod chat;
pub mod components;
pub mod conversations;
pub mod elicitations;
pub mod feedback;
pub mod integrations;
pub mod knowledge;
pub mod mcp;
pub mod model;
pub mod openapi;
pub mod presets;
pub mod resume;
pub mod rotation;
pub mod setup;
mod state;
pub mod test_runner;
pub mod test_runs;
pub mod transcripts;
pub mod usage;
pub mod users;
pub mod workspace;

use axum::Router;
use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::get;
use utoipa::OpenApi as _;
use utoipa_axum::router::OpenApiRouter;

pub use crate::http::{ApiError, ApiJson, bearer};
pub use state::ApiState;

/// Every route of the API, each with its description.
fn routes() -> OpenApiRouter<ApiState> {
    OpenApiRouter::with_openapi(openapi::ApiDoc::openapi())
        .merge(actions::router())
        .merge(apps::router())
        .merge(attachments::router())
        .merge(app_actions::router())
        .merge(audit::router())
        .merge(chat::router())
        .merge(components::router())
        .merge(conversations::router())
        .merge(elicitations::router())
        .merge(feedback::router())
        .merge(integrations::router())
        .merge(knowledge::router())
        .merge(mcp::router())
        .merge(model::router())
        .merge(presets::router())
        .merge(resume::router())
        .merge(rotation::router())
        .merge(setup::router())
        .merge(test_runs::router())
        .merge(transcripts::router())
        .merge(usage::router())
        .merge(users::router())
        .merge(workspace::router())
}

/// The OpenAPI document of every `/v1` route.
pub fn document() -> serde_json::Value {
    openapi::finish(routes().into_openapi())
}

/// Every route of the API, `GET /v1/openapi.json`, and JSON errors for
/// a `/v1` path or method that does not exist.
pub fn router(state: ApiState) -> Router {
    let (router, doc) = routes().split_for_parts();
    let doc: std::sync::Arc<str> = openapi::finish(doc).to_string().into();
    router
        .route(
            "/v1/openapi.json",
            get(move || {
                let doc = doc.clone();
                async move { ([(header::CONTENT_TYPE, "application/json")], doc.to_string()).into_response() }
            }),
        )
        .route("/v1/{*rest}", axum::routing::any(|| async { ApiError::NotFound }))
        .method_not_allowed_fallback(|| async { ApiError::MethodNotAllowed })
        .with_state(state)
}
