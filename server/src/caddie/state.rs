//! What the Caddie routes share: the tool's keys, IdP client and hub
//! client ([`Caddie`]), the routes' state, the cookies, and the small
//! helpers every flow uses (who is signed in, redirects, signed headers).

use std::sync::Arc;

use axum::http::{HeaderMap, HeaderValue};
use axum::response::{IntoResponse, Redirect, Response};

use super::keys::Keys;
use super::oidc::Oidc;
use super::{pages, signed, token};
use crate::client_addr::ClientAddr;
use crate::config::CaddieConfig;
use crate::crypto::Vault;
use crate::db::Pool;
use crate::db::caddie as store;
use crate::ids::now_secs;
use crate::widget_page::WidgetPages;
use crate::workspaces::Workspaces;

/// The grant level a launch provisions (the contract's default level).
pub const DEFAULT_LEVEL: &str = "client";
/// A local copy of the participants older than this is confirmed with the hub first.
pub const PARTICIPANTS_FRESH_MS: i64 = 15 * 60 * 1000;

/// Our session cookie's name: `__Host-` whenever the browser came over
/// https (only this host, path `/`, `Secure`: no subdomain or plain-http
/// page can plant or shadow it); plain over http (development, a private
/// network), where a `Secure` cookie could not be set.
pub(super) fn session_cookie(secure: bool) -> &'static str {
    if secure { "__Host-ca_session" } else { "ca_session" }
}

/// The sign-in flow's state cookie's name (as [`session_cookie`]).
pub(super) fn state_cookie(secure: bool) -> &'static str {
    if secure { "__Host-ca_oidc_state" } else { "ca_oidc_state" }
}
/// Set at logout: the next sign-in is interactive, never a silent probe.
pub(super) const OPTOUT_COOKIE: &str = "bw_optout";

/// What the Caddie routes share.
pub struct Caddie {
    pub config: CaddieConfig,
    pub keys: Keys,
    pub oidc: Oidc,
    /// Cookies carry `Secure` when the public URL is https.
    pub secure_cookies: bool,
    /// Asks the hub for an assignment's current participants (§4).
    pub hub: reqwest::Client,
    /// Our own origin, as browsers see it (`CA_PUBLIC_URL`).
    pub public_origin: String,
}

impl Caddie {
    pub fn new(config: CaddieConfig, public_base: &str) -> Self {
        let keys = Keys::new(&config.secret, config.secret_prev.as_ref());
        let oidc = Oidc::new(config.oidc.clone(), format!("{public_base}/caddie/auth/callback"));
        let hub = crate::host::client_builder()
            .timeout(std::time::Duration::from_secs(5))
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .expect("the HTTP client builds");
        let public_origin = public_base.trim_end_matches('/').to_owned();
        Self { config, keys, oidc, secure_cookies: public_base.starts_with("https://"), hub, public_origin }
    }

    /// `request` to the hub with the signature headers of `body` (§5).
    pub fn signed(&self, mut request: reqwest::RequestBuilder, body: &[u8]) -> reqwest::RequestBuilder {
        for (name, value) in signed_headers(self, body) {
            request = request.header(name, value);
        }
        request
    }

    /// Whether this request's cookies are `Secure`: the public URL is
    /// https, or a trusted proxy says the browser came over https.
    pub(super) fn secure_for(&self, client: Option<&ClientAddr>) -> bool {
        self.secure_cookies || client.is_some_and(|c| c.https)
    }

    /// Whether a state-changing request comes from one of our own pages.
    /// A browser says so with `Sec-Fetch-Site: same-origin`; one without
    /// Fetch Metadata names the page's origin in `Origin` (our pages'
    /// referrer policy, `same-origin`, lets it). Another site's form, or an
    /// `Origin: null`, is refused. A request that says neither is no
    /// browser's (nothing to forge).
    pub(super) fn is_from_our_pages(&self, headers: &HeaderMap) -> bool {
        let value = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
        match (value("sec-fetch-site"), value("origin")) {
            (Some(site), _) => matches!(site, "same-origin" | "none"),
            (None, Some(origin)) => origin == self.public_origin,
            (None, None) => true,
        }
    }

    pub(super) fn cookie(&self, name: &str, value: &str, max_age_secs: i64, secure: bool) -> HeaderValue {
        let secure = if secure { "; Secure" } else { "" };
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

pub(super) use crate::http::cookie_value;

/// The signed-in user, from our own session cookie (under the name this
/// request's scheme gives it: over https only the `__Host-` one counts).
pub(super) async fn signed_in(
    state: &CaddieState,
    headers: &HeaderMap,
    client: Option<&ClientAddr>,
) -> anyhow::Result<Option<String>> {
    let secure = state.caddie.secure_for(client);
    match cookie_value(headers, session_cookie(secure)) {
        Some(token) => store::session_user(&state.pool, &token).await,
        None => Ok(None),
    }
}

pub(super) fn see_other(location: &str) -> Response {
    pages::no_store(Redirect::to(location).into_response())
}

/// To the sign-in, coming back to `next` afterwards.
pub(super) fn to_login(next: &str) -> Response {
    let q = url::form_urlencoded::Serializer::new(String::new()).append_pair("next", next).finish();
    see_other(&format!("/caddie/login?{q}"))
}

/// The headers of a tool→caddie call (§5), signed with the tool→caddie key
/// over `ts + "\n" + nonce + "\n" + body`.
pub(super) fn signed_headers(caddie: &Caddie, body: &[u8]) -> Vec<(&'static str, String)> {
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
    uuid::Uuid::new_v4().hyphenated().to_string()
}

pub(super) fn urlencode(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

/// Only our own Caddie pages may be a sign-in's destination.
pub(super) fn safe_next(next: &str) -> Option<&str> {
    let ok = next.starts_with("/caddie/")
        && !next.starts_with("//")
        && !next.contains('\\')
        && !next.chars().any(char::is_control)
        && next.len() <= 512;
    ok.then_some(next)
}
