//! The assistant as a Caddie tool (caddie-tool-contract-ct1.md), the
//! user-visible half: the signed launch hand-off (§3), identity through the
//! IdP and scoped auto-provisioning (§4), the host bar's context (§6) and
//! the failure pages (§8). Mounted only when `CADDIE_TOOL_SECRET` is set;
//! otherwise every Caddie route answers 404.
//!
//! The flow: `GET /launch?lt=` verifies the token, burns its `jti`, stores a
//! launch context and 303s to the token-free `/caddie/open?cctx=`. That
//! page signs the user in (a session cookie of our own, or OIDC with PKCE,
//! silently first), provisions a grant when §4 allows it, and 303s to the
//! space, `/caddie/spaces/{workspace}?cctx=`, which renders the widget full
//! page wearing the host bar. Embed mode (§9, `embed.rs`) takes the same
//! path inside the hub's frame, from `GET /embed#lt=`.

mod embed;
mod error;
pub mod hub_api;
mod identity;
pub mod keys;
mod launch;
pub mod oidc;
pub mod pages;
mod provision;
pub mod report;
pub mod signed;
mod space;
mod state;
pub mod token;

use axum::Router;
use axum::routing::{get, post};

pub use error::{CaddieError, HubError};
pub use provision::provision;
pub use state::{Caddie, CaddieState, DEFAULT_LEVEL, PARTICIPANTS_FRESH_MS, uuid_v4};

pub fn router(state: CaddieState) -> Router {
    Router::new()
        .route("/launch", get(launch::redeem_launch))
        .route("/caddie/open", get(launch::open_launch))
        .route("/embed", get(embed::entry))
        .route("/api/embed/redeem", post(embed::redeem))
        .route("/caddie/embed/signed-in", get(embed::signed_in_popup))
        .route("/caddie/login", get(identity::start_login))
        .route("/caddie/auth/callback", get(identity::finish_login))
        .route("/caddie/logout", post(identity::log_out))
        .route("/caddie/spaces/{workspace_id}", get(space::show_space))
        .route("/caddie/api/context/{ctx}", get(space::get_context))
        .route("/caddie/api/spaces/{workspace_id}/token", post(space::renew_space_token))
        .route("/api/meta", get(hub_api::meta))
        .route("/caddie/api/assignments", post(hub_api::provision))
        .route("/caddie/api/assignments/{assignment_id}/status", get(hub_api::status))
        .route("/caddie/api/revoke", post(hub_api::revoke))
        .with_state(state)
}
