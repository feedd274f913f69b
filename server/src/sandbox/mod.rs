//! The two pages an MCP App is shown through (issue #31, docs/mcp.md):
//!
//! - The bridge (`/widget/app/{id}`, on the assistant's own origin): the
//!   widget frames it where the app appears, so its code loads only then.
//!   It fetches the app with the app token after `#`, frames the sandbox
//!   page, speaks the MCP Apps protocol with the app, hands each of the
//!   app's requests to the server to decide (`api/apps.rs`), and draws the
//!   questions to the visitor outside the app's frame.
//! - The sandbox (`CA_SANDBOX_URL`'s origin, and nothing else there): an
//!   empty page whose policy is built from the origins the app declared
//!   (`mcp::apps::Csp`); it takes the app's HTML from the bridge and runs
//!   it in a frame sandboxed without `allow-same-origin` (no origin at all,
//!   so no cookies, storage or access to the page around it), relaying
//!   messages between the two.
//!
//! `frame-ancestors` checks every page above a frame, so both pages name
//! the assistant's origin and the pages that may frame the widget.

use std::sync::{Arc, LazyLock};

use axum::Router;
use axum::extract::{Path, RawQuery, Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use widget::wire::i18n;

use crate::db::{self, Pool};
use crate::mcp::apps::Csp;

/// The sandbox page's script, minified; `__HOST__` is the assistant's origin and
/// `__ALLOW__` the `allow` of the app's frame.
static SANDBOX_JS: LazyLock<String> = LazyLock::new(|| minifier::js::minify(include_str!("sandbox.js")).to_string());
/// The bridge page's script, minified.
static BRIDGE_JS: LazyLock<String> = LazyLock::new(|| minifier::js::minify(include_str!("bridge.js")).to_string());
/// The bridge page's style.
const BRIDGE_CSS: &str = include_str!("bridge.css");

/// The tallest an app may make itself inside the panel, in CSS pixels.
pub const MAX_APP_HEIGHT: u32 = 600;

/// What both pages need.
#[derive(Clone)]
pub struct SandboxState {
    pub pool: Pool,
    /// The assistant's origin (the widget's and the bridge's).
    pub public_origin: Arc<str>,
    /// The sandbox's origin (`CA_SANDBOX_URL`), without a trailing slash.
    pub sandbox_origin: Arc<str>,
    /// The Caddie hub, which frames the widget in a Caddie space.
    pub hub_origin: Option<String>,
}

impl SandboxState {
    /// The origins that may frame a page of workspace `workspace_id`'s
    /// apps: the assistant's own, the workspace's pages and Caddie's hub.
    async fn ancestors(&self, workspace_id: &str) -> anyhow::Result<Option<Vec<String>>> {
        let Some(workspace) = db::workspace(&self.pool, workspace_id).await? else { return Ok(None) };
        let mut ancestors = vec![self.public_origin.to_string()];
        ancestors.extend(workspace.allowed_origins());
        ancestors.extend(self.hub_origin.clone());
        Ok(Some(ancestors))
    }
}

/// True when `host` (a `Host` header) names `origin`'s host and port.
fn names_origin(origin: &str, host: &str) -> bool {
    url::Url::parse(origin).is_ok_and(|url| {
        let name = url.host_str().unwrap_or_default();
        let port = url.port_or_known_default().map(|p| format!(":{p}")).unwrap_or_default();
        host.eq_ignore_ascii_case(&format!("{name}{port}")) || (url.port().is_none() && host.eq_ignore_ascii_case(name))
    })
}

/// The routes of the sandbox's origin: its page, nothing else.
pub fn sandbox_router(state: SandboxState) -> Router {
    Router::new().route("/", get(sandbox_page)).fallback(|| async { StatusCode::NOT_FOUND }).with_state(state)
}

/// The bridge page, on the assistant's origin.
pub fn bridge_router(state: SandboxState) -> Router {
    Router::new().route("/widget/app/{id}", get(bridge_page)).with_state(state)
}

/// Serves a request to the sandbox's host name (the sandbox on the main
/// listener behind one proxy) with the sandbox's routes only.
pub async fn by_host(State(state): State<SandboxState>, request: Request, next: Next) -> Response {
    let host = request.headers().get(header::HOST).and_then(|h| h.to_str().ok()).unwrap_or("");
    if !names_origin(&state.sandbox_origin, host) {
        return next.run(request).await;
    }
    use tower::ServiceExt;
    match sandbox_router(state.clone()).oneshot(request).await {
        Ok(response) => response,
        Err(never) => match never {},
    }
}

/// Headers both pages share: embeddable by a cross-origin-isolated page
/// (the widget sets `credentialless`), never cached, no referrer.
fn framed(mut response: Response, csp: &str, cross_origin: bool) -> Response {
    let headers = response.headers_mut();
    let Ok(csp) = HeaderValue::from_str(csp) else { return StatusCode::INTERNAL_SERVER_ERROR.into_response() };
    headers.insert(header::CONTENT_SECURITY_POLICY, csp);
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(
        header::HeaderName::from_static("cross-origin-embedder-policy"),
        HeaderValue::from_static("credentialless"),
    );
    headers.insert(
        header::HeaderName::from_static("cross-origin-resource-policy"),
        HeaderValue::from_static(if cross_origin { "cross-origin" } else { "same-origin" }),
    );
    response
}

/// The sandbox page: its policy from the query's origins (each checked
/// again: anyone may write a query), framed only by the workspace's
/// pages and the assistant.
async fn sandbox_page(State(state): State<SandboxState>, RawQuery(query): RawQuery) -> Response {
    let pairs: Vec<(String, String)> =
        url::form_urlencoded::parse(query.unwrap_or_default().as_bytes()).into_owned().collect();
    let Some(workspace) = pairs.iter().find(|(k, _)| k == "ws").map(|(_, v)| v.as_str()) else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let ancestors = match state.ancestors(workspace).await {
        Ok(Some(ancestors)) => ancestors,
        Ok(None) => return StatusCode::NOT_FOUND.into_response(),
        Err(error) => {
            tracing::error!(error = format!("{error:#}"), "cannot read the workspace of a sandbox page");
            return StatusCode::INTERNAL_SERVER_ERROR.into_response();
        }
    };
    let csp = Csp::from_query(&pairs).header(&ancestors);
    let host = serde_json::to_string(&*state.public_origin).unwrap_or_default().replace('<', "\\u003c");
    // The features the bridge lends the app's frame (from GET /v1/apps):
    // known ones only. A frame can lend no more than it was lent itself.
    let allow: Vec<&str> = pairs
        .iter()
        .filter(|(k, _)| k == "allow")
        .flat_map(|(_, v)| v.split(' '))
        .filter(|f| crate::mcp::apps::is_permission(f))
        .collect();
    let allow = serde_json::to_string(&allow.join("; ")).unwrap_or_default();
    let script = SANDBOX_JS.replace("\"__HOST__\"", &host).replace("\"__ALLOW__\"", &allow);
    let page = format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>App</title>\
         <style>html,body{{margin:0;height:100%;overflow:hidden;background:transparent}}\
         iframe{{border:0;width:100%;height:100%;display:block}}</style></head>\
         <body><script>{script}</script></body></html>"
    );
    framed(Html(page).into_response(), &csp, true)
}

/// The bridge page for app `id`: its words in every language the widget
/// speaks (it reads the widget's), its script under a nonce, and framing
/// only by the widget's ancestors. It carries nothing of the app: that
/// comes with the app token.
async fn bridge_page(State(state): State<SandboxState>, Path(id): Path<String>) -> Response {
    let workspace = match db::apps::workspace_of(&state.pool, &id).await {
        Ok(Some(workspace)) => workspace,
        Ok(None) => return StatusCode::NOT_FOUND.into_response(),
        Err(error) => {
            tracing::error!(error = format!("{error:#}"), "cannot read an app's view");
            return StatusCode::INTERNAL_SERVER_ERROR.into_response();
        }
    };
    let ancestors = match state.ancestors(&workspace).await {
        Ok(Some(ancestors)) => ancestors,
        Ok(None) => return StatusCode::NOT_FOUND.into_response(),
        Err(error) => {
            tracing::error!(error = format!("{error:#}"), "cannot read the workspace of an app");
            return StatusCode::INTERNAL_SERVER_ERROR.into_response();
        }
    };
    let words = i18n::table(&[&i18n::APP_KEYS[..], &i18n::APP_SHARED_KEYS[..]].concat());
    let config = serde_json::json!({
        "id": id,
        "words": words,
        "maxHeight": MAX_APP_HEIGHT,
        "sandboxOrigin": &*state.sandbox_origin,
    })
    .to_string()
    .replace('<', "\\u003c");
    let nonce = crate::ids::new_id("n");
    let page = format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>App</title>\
         <style nonce=\"{nonce}\">{BRIDGE_CSS}</style></head><body>\
         <div id=\"app\"></div><div id=\"chrome\"></div>\
         <script type=\"application/json\" id=\"config\">{config}</script>\
         <script nonce=\"{nonce}\">{}</script></body></html>",
        *BRIDGE_JS
    );
    let ancestors: Vec<&str> = ancestors
        .iter()
        .map(String::as_str)
        .filter(|o| o.bytes().all(|b| b.is_ascii_graphic() && b != b';' && b != b','))
        .collect();
    let csp = format!(
        "default-src 'none'; script-src 'nonce-{nonce}'; style-src 'nonce-{nonce}'; connect-src 'self'; \
         frame-src {}; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'self' {}",
        state.sandbox_origin,
        ancestors.join(" ")
    );
    framed(Html(page).into_response(), &csp, false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_sandboxs_own_host_is_the_sandbox() {
        let local = "http://127.0.0.1:3001";
        assert!(names_origin(local, "127.0.0.1:3001"));
        assert!(!names_origin(local, "127.0.0.1:3000") && !names_origin(local, "127.0.0.1"));
        let public = "https://apps.example";
        assert!(names_origin(public, "apps.example") && names_origin(public, "APPS.example:443"));
        assert!(!names_origin(public, "assistant.example") && !names_origin(public, "apps.example.evil"));
    }
}
