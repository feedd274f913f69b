//! The embed: `/embed.js` (the plain-JS loader a host page includes) and
//! `/widget` (the Leptos chat app the loader frames). The widget page may
//! only be framed by the workspace's `allowed_origins` (CSP
//! `frame-ancestors`), and its scripts run under a per-response nonce.

use std::sync::LazyLock;

use axum::Router;
use axum::extract::{Query, Request, State};
use axum::http::{StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use serde::Deserialize;
use widget::wire::i18n;
use widget::wire::{Theme, WidgetBoot};

use crate::db::{self, Pool};
use crate::widget_page::WidgetPages;

/// The loader as served: its source with the loader's words of every
/// language filled in, minified (the budget is 3 KB gzipped: tests/api/embed.rs).
static LOADER_JS: LazyLock<String> = LazyLock::new(|| loader_js(include_str!("embed/loader.js")));

/// `source` with `/*WORDS*/{}` replaced by each language's loader words
/// (`i18n::LOADER_KEYS`, in order), minified.
fn loader_js(source: &str) -> String {
    let words: serde_json::Map<String, serde_json::Value> = i18n::LANGUAGES
        .iter()
        .map(|lang| {
            let texts = i18n::LOADER_KEYS.iter().map(|key| i18n::text(lang, key).into()).collect();
            ((*lang).to_owned(), serde_json::Value::Array(texts))
        })
        .collect();
    // As JSON in a script: `<` escaped so no text can close a tag around it.
    let words = serde_json::Value::Object(words).to_string().replace('<', "\\u003c");
    minifier::js::minify(&source.replace("/*WORDS*/{}", &words)).to_string()
}

/// The widget's attachments code (`widget/src/js/attach.js`), loaded
/// only when a visitor first attaches a file or opens an image: with
/// every language's words (`i18n::ATTACH_KEYS`) and the largest upload
/// (`/*MAX*/0`) filled in, minified.
fn attach_js(max_bytes: u64) -> String {
    let words = i18n::table(&i18n::ATTACH_KEYS).to_string().replace('<', "\\u003c");
    let source = include_str!("../../widget/src/js/attach.js");
    minifier::js::minify(&source.replace("/*WORDS*/{}", &words).replace("/*MAX*/0", &max_bytes.to_string())).to_string()
}

/// What the embed's routes share.
#[derive(Clone)]
pub struct EmbedState {
    pub pool: Pool,
    pub pages: WidgetPages,
    /// `CA_MAX_ATTACHMENT_BYTES`: the widget refuses a larger file before
    /// sending it.
    pub max_attachment_bytes: u64,
}

pub fn router(state: EmbedState) -> Router {
    let script = std::sync::Arc::<str>::from(attach_js(state.max_attachment_bytes));
    Router::new()
        .route("/embed.js", get(loader))
        .route("/widget", get(widget_page))
        .route("/widget/forget", get(forget_page))
        .route(
            "/widget/attach.js",
            get(move || async move { asset("text/javascript; charset=utf-8", script.to_string()) }),
        )
        .route("/widget/attach.css", get(|| async { asset("text/css; charset=utf-8", ATTACH_CSS.to_owned()) }))
        .with_state(state)
}

/// The attachments code's style, loaded with it.
const ATTACH_CSS: &str = include_str!("../../widget/src/js/attach.css");

/// A file of the widget's own, for its pages on this origin.
fn asset(content_type: &'static str, body: String) -> Response {
    (
        [
            (header::CONTENT_TYPE, content_type),
            (header::CACHE_CONTROL, "public, max-age=300"),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        ],
        body,
    )
        .into_response()
}

/// The loader. Any page may load it, also a cross-origin-isolated one
/// (`Cross-Origin-Embedder-Policy: require-corp`), which blocks a script
/// from another origin unless it says it may be embedded anywhere.
async fn loader() -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/javascript; charset=utf-8"),
            (header::CACHE_CONTROL, "public, max-age=300"),
            (CROSS_ORIGIN_RESOURCE_POLICY, "cross-origin"),
        ],
        LOADER_JS.as_str(),
    )
        .into_response()
}

const CROSS_ORIGIN_RESOURCE_POLICY: header::HeaderName =
    header::HeaderName::from_static("cross-origin-resource-policy");

#[derive(Deserialize)]
struct WidgetQuery {
    ws: Option<String>,
    theme: Option<String>,
    accent: Option<String>,
    radius: Option<String>,
    font: Option<String>,
    /// The host's choice of language (`data-lang`, `init({ lang })`).
    lang: Option<String>,
}

/// The widget, server-rendered and hydrated. Carries no token: the loader
/// hands one over by `postMessage` once the frame says it is ready.
async fn widget_page(State(state): State<EmbedState>, Query(query): Query<WidgetQuery>, request: Request) -> Response {
    let workspace = match query.ws.as_deref().filter(|ws| ws.len() <= 64) {
        Some(ws) => db::workspace(&state.pool, ws).await,
        None => Ok(None),
    };
    let workspace =
        match workspace {
            Ok(Some(w)) => w,
            Ok(None) => return (
                StatusCode::NOT_FOUND,
                Html(
                    "<!doctype html><title>Unknown workspace</title><p>This assistant is not set up for this page.</p>",
                ),
            )
                .into_response(),
            Err(error) => {
                tracing::error!(error = format!("{error:#}"), "cannot load the workspace for the widget");
                return StatusCode::INTERNAL_SERVER_ERROR.into_response();
            }
        };
    let allowed_origins = workspace.allowed_origins();
    let boot = WidgetBoot {
        workspace_id: workspace.id.clone(),
        allowed_origins: allowed_origins.clone(),
        demo_model: state.pages.demo_model,
        title: workspace.name.clone(),
        theme: page_theme(&query, workspace.theme()),
        token: None,
        renew_path: None,
        caddie: None,
        lang: query.lang.unwrap_or_default(),
        accept: crate::attachments::accept(workspace.attachment_types().as_deref()),
        ..WidgetBoot::default()
    };
    state.pages.render(boot, &workspace.welcome(), &allowed_origins, request).await
}

/// The page `ContextAssistant.logout()` loads in a hidden frame when a
/// visitor signs out of the host: it empties what the widget keeps for the
/// workspace in the frame's own storage (partitioned by the host's site:
/// the frame sees what the widget kept on that host), also the keys kept
/// before they were bound to a user, and tells the loader. Framed only by
/// the workspace's pages; its one script is allowed by its hash.
async fn forget_page(State(state): State<EmbedState>, Query(query): Query<WidgetQuery>) -> Response {
    let workspace = match query.ws.as_deref().filter(|ws| ws.len() <= 64) {
        Some(ws) => db::workspace(&state.pool, ws).await,
        None => Ok(None),
    };
    let workspace = match workspace {
        Ok(Some(w)) => w,
        Ok(None) => return StatusCode::NOT_FOUND.into_response(),
        Err(error) => {
            tracing::error!(error = format!("{error:#}"), "cannot load the workspace for the forget page");
            return StatusCode::INTERNAL_SERVER_ERROR.into_response();
        }
    };
    let csp = format!(
        "default-src 'none'; script-src '{}'; base-uri 'none'; form-action 'none'; frame-ancestors {}",
        *FORGET_SCRIPT_HASH,
        crate::widget_page::frame_ancestors(&workspace.allowed_origins())
    );
    let page = format!(
        "<!doctype html><meta charset=\"utf-8\"><title>Context Assistant</title>\
         <script data-ws=\"{}\">{FORGET_SCRIPT}</script>",
        widget::html::escape(&workspace.id)
    );
    let Ok(csp) = header::HeaderValue::from_str(&csp) else { return StatusCode::INTERNAL_SERVER_ERROR.into_response() };
    (
        [
            (header::CONTENT_SECURITY_POLICY, csp),
            (header::CACHE_CONTROL, header::HeaderValue::from_static("no-store")),
            (header::X_CONTENT_TYPE_OPTIONS, header::HeaderValue::from_static("nosniff")),
        ],
        Html(page),
    )
        .into_response()
}

/// The forget page's script: the widget's record for the workspace
/// (`js/dom.js` `keepToken`) and the keys of before it, removed; nothing
/// secret in its message, so any origin may hear it.
const FORGET_SCRIPT: &str = "var w=document.currentScript.dataset.ws;\
    try{[\"\",\"outbox:\",\"view:\",\"conversation:\"].forEach(function(k){localStorage.removeItem(\"ca:\"+k+w)})}catch(e){}\
    parent.postMessage({type:\"ca:forgotten\"},\"*\")";

/// `FORGET_SCRIPT`'s CSP source: `sha256-…` of its text.
static FORGET_SCRIPT_HASH: LazyLock<String> = LazyLock::new(|| {
    use base64::Engine as _;
    use sha2::Digest as _;
    format!("sha256-{}", base64::engine::general_purpose::STANDARD.encode(sha2::Sha256::digest(FORGET_SCRIPT)))
});

/// The host page's look (`init` options, validated), each value it does
/// not set from the workspace's default.
fn page_theme(query: &WidgetQuery, default: Theme) -> Theme {
    let page =
        Theme::parse(query.theme.as_deref(), query.accent.as_deref(), query.radius.as_deref(), query.font.as_deref());
    Theme {
        mode: page.mode.or(default.mode),
        accent: page.accent.or(default.accent),
        radius: page.radius.or(default.radius),
        font: page.font.or(default.font),
    }
}
