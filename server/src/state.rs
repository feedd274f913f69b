//! The one state every handler shares: pools and `Arc`s only.

use std::sync::Arc;

use axum::extract::FromRef;
use leptos::config::LeptosOptions;

use crate::bistro::Bistro;
use crate::config::Config;
use crate::crypto::Vault;
use crate::db::Pool;
use crate::engine::Engine;
use crate::engine::turns::TurnRegistry;

#[derive(Clone, FromRef)]
pub struct AppState {
    pub pool: Pool,
    pub vault: Vault,
    pub config: Arc<Config>,
    pub engine: Engine,
    pub turns: TurnRegistry,
    pub bistro: Arc<Bistro>,
    pub leptos_options: LeptosOptions,
    /// The assistant's own origin, e.g. `http://127.0.0.1:3000`.
    pub public_origin: Arc<str>,
    /// The Caddie tool side, when configured.
    pub caddie: Option<Arc<crate::caddie::Caddie>>,
    /// Direct tool calls from components, per user.
    pub component_calls: crate::api::rate::RateLimiter,
}
