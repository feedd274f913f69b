//! The demo: an "Acme Bistro" host page at `/` that embeds the widget with
//! one script tag, and the demo workspace, connected at start to the
//! built-in bistro host. The page mints its embed token server-side, as a
//! host's backend would; no secret is ever in the page.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;

use crate::auth;
use crate::crypto::{Vault, hash_api_key};
use crate::db::{self, NewIntegration, NewWorkspace, Pool};
use crate::http::ApiError;
use crate::ids::random_bytes;
use crate::secret::Secret;
use crate::workspaces::PROVIDER;

/// The demo workspace's fixed id.
pub const DEMO_WORKSPACE: &str = "ws_demo";
const GUEST_COOKIE: &str = "acme_guest";

/// What the demo's routes share.
#[derive(Clone)]
pub struct DemoState {
    pub pool: Pool,
    pub vault: Vault,
    /// `CA_DEMO`: off shows a short page about the server instead.
    pub enabled: bool,
    /// The assistant's own origin, allowed to frame the demo's widget.
    pub public_origin: Arc<str>,
    /// The built-in bistro host's bearer secret, for the demo's integration.
    pub bistro_secret: Secret,
    /// `CA_DEMO_KNOWLEDGE`: the demo workspace reads the bistro's help center.
    pub knowledge: bool,
}

pub fn router(state: DemoState) -> Router {
    Router::new().route("/", get(demo_page)).route("/demo/token", get(demo_token)).with_state(state)
}

/// Creates the demo workspace once, then (every start) points its
/// integration at this server's bistro host and allows this server's origin.
pub async fn seed(state: &DemoState, loopback: SocketAddr) -> anyhow::Result<()> {
    seed_workspace(state, loopback).await?;
    if state.knowledge {
        seed_help_center(state, loopback).await?;
    }
    Ok(())
}

/// The help center's name as a source of the demo workspace.
const HELP_CENTER: &str = "Acme Bistro help center";

/// The bistro's help center as a knowledge source of the demo workspace,
/// at this server's address (re-pointed when the address changed).
async fn seed_help_center(state: &DemoState, loopback: SocketAddr) -> anyhow::Result<()> {
    // The bistro's help center (`bistro::help`; an edge does not import another).
    let url = format!("http://{loopback}/bistro/help/sitemap.xml");
    let existing = db::knowledge::sources(&state.pool, DEMO_WORKSPACE).await?;
    let mut current = false;
    for source in existing.iter().filter(|s| s.name == HELP_CENTER) {
        let config: serde_json::Value = serde_json::from_str(&source.config).unwrap_or_default();
        if config["url"] == url.as_str() && !current {
            current = true;
        } else {
            db::knowledge::delete_source(&state.pool, DEMO_WORKSPACE, &source.id).await?;
        }
    }
    if !current {
        // `trusted`: the server's own loopback address (never settable over the API).
        let config = serde_json::json!({ "url": url, "trusted": true });
        let source = db::knowledge::NewSource {
            workspace_id: DEMO_WORKSPACE,
            kind: "sitemap",
            name: HELP_CENTER,
            config: &config,
            language: Some("en"),
            refresh_hours: 24,
        };
        db::knowledge::insert_source(&state.pool, source, crate::ids::now_ms()).await?;
    }
    Ok(())
}

async fn seed_workspace(state: &DemoState, loopback: SocketAddr) -> anyhow::Result<()> {
    // The page is served at the public origin, and on this machine also at
    // the listen address (by IP and as localhost).
    let mut origins = vec![state.public_origin.to_string()];
    for local in [format!("http://{loopback}"), format!("http://localhost:{}", loopback.port())] {
        if !origins.contains(&local) {
            origins.push(local);
        }
    }
    if db::workspace(&state.pool, DEMO_WORKSPACE).await?.is_none() {
        // The demo's api key is never shown: it is not administered over the API.
        let api_key = hex::encode(random_bytes::<24>());
        let inserted = db::insert_workspace(
            &state.pool,
            NewWorkspace {
                id: DEMO_WORKSPACE,
                name: "Acme Bistro",
                allowed_origins: &origins,
                api_key_hash: &hash_api_key(&api_key),
                embed_secret_enc: &state.vault.seal(&hex::encode(random_bytes::<32>())),
            },
        )
        .await;
        // Another replica may have created it at the same moment.
        if inserted.is_err() && db::workspace(&state.pool, DEMO_WORKSPACE).await?.is_none() {
            inserted?;
        }
    }
    db::set_workspace_origins(&state.pool, DEMO_WORKSPACE, &origins).await?;
    // The bistro's start screen, unless its console changed it. The demo
    // model follows English phrases, so its prompts are English only.
    let welcome = widget::wire::Welcome {
        en: Some(widget::wire::StartScreen {
            greeting: Some("Hi! I'm the Acme Bistro's assistant: ask me about the menu or your order.".into()),
            prompts: ["Show me the menu", "What's in my cart?", "Add two margheritas (no basil)", "Check out"]
                .map(String::from)
                .to_vec(),
        }),
        ..Default::default()
    };
    db::set_workspace_welcome_if_unset(&state.pool, DEMO_WORKSPACE, &welcome).await?;
    db::upsert_integration(
        &state.pool,
        NewIntegration {
            workspace_id: DEMO_WORKSPACE,
            provider: PROVIDER,
            base_url: &format!("http://{loopback}/bistro/api"),
            secret_enc: &state.vault.seal(state.bistro_secret.expose()),
            allowed_tools: &[],
            builtin: true,
            preset: None,
            kind: db::KIND_REMOTE_TOOLS,
            trust_annotations: false,
            verbs: "{}",
        },
    )
    .await?;
    Ok(())
}

#[derive(serde::Deserialize)]
struct DemoQuery {
    lang: Option<String>,
}

/// A token for the demo workspace, for `sub` — what a host's backend does.
pub async fn mint_demo_token(state: &DemoState, sub: &str) -> Result<String, ApiError> {
    let workspace = db::workspace(&state.pool, DEMO_WORKSPACE).await?.ok_or(ApiError::NotFound)?;
    let secret = state.vault.open(&workspace.embed_secret_enc)?;
    Ok(auth::mint(DEMO_WORKSPACE, secret.expose(), sub, &["menu:read".into(), "cart:write".into()], 3600))
}

/// The Acme Bistro page. Each visitor gets a guest id in a cookie, so
/// their conversations are theirs across reloads.
/// `?lang=ar` (a language the widget speaks) plays a host whose page is
/// in that language: its script tag says `data-lang`.
async fn demo_page(
    State(state): State<DemoState>,
    Query(query): Query<DemoQuery>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    if !state.enabled {
        return Ok(Html(ABOUT_PAGE).into_response());
    }
    let existing = guest_from_cookie(&headers);
    let guest = existing.clone().unwrap_or_else(|| format!("guest_{}", hex::encode(random_bytes::<12>())));
    let token = mint_demo_token(&state, &guest).await?;
    let lang = query.lang.as_deref().and_then(widget::wire::i18n::spoken);
    let page = DEMO_PAGE
        .replace("{{WORKSPACE}}", DEMO_WORKSPACE)
        .replace("{{TOKEN}}", &token)
        .replace("{{LANG}}", &lang.map(|l| format!(" data-lang=\"{l}\"")).unwrap_or_default());
    let mut response = Html(page).into_response();
    response.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    if existing.is_none() {
        let cookie = format!("{GUEST_COOKIE}={guest}; Path=/; HttpOnly; SameSite=Lax; Max-Age=31536000");
        response.headers_mut().insert(header::SET_COOKIE, HeaderValue::from_str(&cookie).expect("ascii cookie"));
    }
    Ok(response)
}

/// A fresh token for the page's guest (the loader's `data-token-url`), as a
/// host's backend would answer its own page when the first token expires.
async fn demo_token(State(state): State<DemoState>, headers: HeaderMap) -> Result<Response, ApiError> {
    if !state.enabled {
        return Err(ApiError::NotFound);
    }
    let guest = guest_from_cookie(&headers).ok_or(ApiError::Unauthorized)?;
    let token = mint_demo_token(&state, &guest).await?;
    Ok(([(header::CONTENT_TYPE, "text/plain; charset=utf-8"), (header::CACHE_CONTROL, "no-store")], token)
        .into_response())
}

/// The guest id, only if it has the exact shape this page gives out.
fn guest_from_cookie(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().strip_prefix(&format!("{GUEST_COOKIE}=")).map(str::to_owned))
        .find(|v| v.len() == 30 && v.starts_with("guest_") && v[6..].bytes().all(|b| b.is_ascii_hexdigit()))
}

const DEMO_PAGE: &str = include_str!("demo/page.html");

const ABOUT_PAGE: &str = "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>Context Assistant</title></head>\
    <body><h1>Context Assistant</h1><p>This server hosts the assistant's API and widget. \
    Embed it with <code>&lt;script src=\"/embed.js\" data-workspace=\"…\" async&gt;&lt;/script&gt;</code>.</p></body></html>";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_well_formed_guest_cookies_are_reused() {
        let mut h = HeaderMap::new();
        h.insert(header::COOKIE, HeaderValue::from_static("a=b; acme_guest=guest_0123456789abcdef01234567"));
        assert_eq!(guest_from_cookie(&h).as_deref(), Some("guest_0123456789abcdef01234567"));
        h.insert(header::COOKIE, HeaderValue::from_static("acme_guest=admin"));
        assert_eq!(guest_from_cookie(&h), None);
    }
}
