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
//! page wearing the host bar.

mod error;
pub mod hub_api;
mod identity;
pub mod keys;
mod launch;
pub mod oidc;
pub mod pages;
pub mod report;
pub mod signed;
mod space;
pub mod token;

use std::sync::Arc;

use axum::Router;
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};

use crate::config::CaddieConfig;
use crate::crypto::Vault;
use crate::db::Pool;
use crate::db::caddie as store;
use crate::ids::now_secs;
use crate::widget_page::WidgetPages;
use crate::workspaces::Workspaces;
pub use error::{CaddieError, HubError};
use keys::Keys;
use oidc::Oidc;

/// The grant level a launch provisions (the contract's default level).
pub const DEFAULT_LEVEL: &str = "client";
/// A local copy of the participants older than this is confirmed with the hub first.
pub const PARTICIPANTS_FRESH_MS: i64 = 15 * 60 * 1000;

const SESSION_COOKIE: &str = "ca_session";
const STATE_COOKIE: &str = "ca_oidc_state";
/// Set at logout: the next sign-in is interactive, never a silent probe.
const OPTOUT_COOKIE: &str = "bw_optout";

/// What the Caddie routes share.
pub struct Caddie {
    pub config: CaddieConfig,
    pub keys: Keys,
    pub oidc: Oidc,
    /// Cookies carry `Secure` when the public URL is https.
    pub secure_cookies: bool,
    /// Asks the hub for an assignment's current participants (§4).
    pub hub: reqwest::Client,
}

impl Caddie {
    pub fn new(config: CaddieConfig, public_base: &str) -> Self {
        let keys = Keys::new(&config.secret, config.secret_prev.as_ref());
        let oidc = Oidc::new(config.oidc.clone(), format!("{public_base}/caddie/auth/callback"));
        let hub = reqwest::Client::builder()
            .timeout(std::time::Duration::from_secs(5))
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .expect("the HTTP client builds");
        Self { config, keys, oidc, secure_cookies: public_base.starts_with("https://"), hub }
    }

    /// `request` to the hub with the signature headers of `body` (§5).
    pub fn signed(&self, mut request: reqwest::RequestBuilder, body: &[u8]) -> reqwest::RequestBuilder {
        for (name, value) in signed_headers(self, body) {
            request = request.header(name, value);
        }
        request
    }

    fn cookie(&self, name: &str, value: &str, max_age_secs: i64) -> HeaderValue {
        let secure = if self.secure_cookies { "; Secure" } else { "" };
        HeaderValue::from_str(&format!(
            "{name}={value}; Path=/; HttpOnly; SameSite=Lax; Max-Age={max_age_secs}{secure}"
        ))
        .expect("cookie values are ASCII")
    }
}

/// What the Caddie routes share.
#[derive(Clone)]
pub struct CaddieState {
    pub caddie: Arc<Caddie>,
    pub pool: Pool,
    pub vault: Vault,
    pub workspaces: Workspaces,
    pub pages: WidgetPages,
}

pub fn router(state: CaddieState) -> Router {
    Router::new()
        .route("/launch", get(launch::redeem_launch))
        .route("/caddie/open", get(launch::open_launch))
        .route("/caddie/login", get(identity::start_login))
        .route("/caddie/auth/callback", get(identity::finish_login))
        .route("/caddie/logout", post(identity::log_out))
        .route("/caddie/spaces/{workspace_id}", get(space::show_space))
        .route("/caddie/api/context/{ctx}", get(space::get_context))
        .route("/caddie/api/spaces/{workspace_id}/token", post(space::renew_space_token))
        .route("/caddie/api/assignments", post(hub_api::provision))
        .route("/caddie/api/assignments/{assignment_id}/status", get(hub_api::status))
        .route("/caddie/api/revoke", post(hub_api::revoke))
        .with_state(state)
}

/// A cookie's value from the request.
fn cookie_value(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.to_owned())
}

/// The signed-in user, from our own session cookie.
async fn signed_in(pool: &Pool, headers: &HeaderMap) -> anyhow::Result<Option<String>> {
    match cookie_value(headers, SESSION_COOKIE) {
        Some(token) => store::session_user(pool, &token).await,
        None => Ok(None),
    }
}

fn see_other(location: &str) -> Response {
    pages::no_store(Redirect::to(location).into_response())
}

/// To the sign-in, coming back to `next` afterwards.
fn to_login(next: &str) -> Response {
    let q = url::form_urlencoded::Serializer::new(String::new()).append_pair("next", next).finish();
    see_other(&format!("/caddie/login?{q}"))
}

/// The headers of a tool→caddie call (§5), signed with the tool→caddie key
/// over `ts + "\n" + nonce + "\n" + body`.
fn signed_headers(caddie: &Caddie, body: &[u8]) -> Vec<(&'static str, String)> {
    use hmac::Mac;
    let ts = now_secs().to_string();
    let nonce = uuid_v4();
    let mac = signed::signature(&caddie.keys.current.tool_to_caddie, &ts, &nonce, body);
    vec![
        ("X-Caddie-Tool", caddie.config.slug.clone()),
        ("X-Caddie-Contract", token::CONTRACT.to_owned()),
        ("X-Caddie-Key", caddie.keys.current.kid.clone()),
        ("X-Caddie-Timestamp", ts),
        ("X-Caddie-Nonce", nonce),
        ("X-Caddie-Signature", hex::encode(mac.finalize().into_bytes())),
    ]
}

/// A random (version 4) UUID.
pub fn uuid_v4() -> String {
    let mut b = crate::ids::random_bytes::<16>();
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h = hex::encode(b);
    format!("{}-{}-{}-{}-{}", &h[0..8], &h[8..12], &h[12..16], &h[16..20], &h[20..32])
}

fn urlencode(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

/// Only our own Caddie pages may be a sign-in's destination.
fn safe_next(next: &str) -> Option<&str> {
    let ok = next.starts_with("/caddie/")
        && !next.starts_with("//")
        && !next.contains('\\')
        && !next.chars().any(char::is_control)
        && next.len() <= 512;
    ok.then_some(next)
}

/// Provisioning (§2), idempotent on `assignment_id`: the first call makes
/// the assistant space (a workspace of its own) and its link; later calls
/// refresh the participants and return the same space. The space's data is
/// the assistant's own and survives the hub forgetting it.
pub async fn provision(
    state: &CaddieState,
    assignment_id: &str,
    project_id: &str,
    project_name: &str,
    config: &serde_json::Value,
    participants: &[String],
    stages: &serde_json::Value,
) -> anyhow::Result<String> {
    if let Some(link) = store::link_by_assignment(&state.pool, assignment_id).await? {
        store::apply_participants(&state.pool, &link, participants).await?;
        store::set_stages(&state.pool, assignment_id, stages).await?;
        return Ok(link.workspace_id);
    }
    let name: String = project_name.chars().take(200).collect();
    let workspace = state.workspaces.create(&name, &[]).await?;
    store::insert_link(
        &state.pool,
        store::NewLink {
            assignment_id,
            workspace_id: &workspace.id,
            project_id,
            project_name: &name,
            config,
            participants,
            stages,
        },
    )
    .await?;
    tracing::info!(assignment_id, workspace_id = %workspace.id, "caddie: space provisioned");
    Ok(workspace.id)
}
