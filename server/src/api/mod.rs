//! The HTTP API (assistant-api.md): a router per resource, each taking
//! only [`ApiState`], the API's own part of the application's state; the
//! chat API's caller comes from the embed token (`state.rs`).

pub mod actions;
pub mod chat;
pub mod components;
pub mod conversations;
pub mod rate;
pub mod setup;
mod state;

use axum::Router;

pub use crate::http::{ApiError, ApiJson, bearer};
pub use state::ApiState;

/// Every route of the API.
pub fn router(state: ApiState) -> Router {
    Router::new()
        .merge(actions::router())
        .merge(chat::router())
        .merge(components::router())
        .merge(conversations::router())
        .merge(setup::router())
        .with_state(state)
}
