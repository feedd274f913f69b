//! The embed: `/embed.js` (the plain-JS loader a host page includes) and
//! `/widget` (the Leptos chat app the loader frames). The widget page may
//! only be framed by the workspace's `allowed_origins` (CSP
//! `frame-ancestors`), and its scripts run under a per-response nonce.

use axum::Router;
use axum::extract::{Query, Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use leptos::prelude::provide_context;
use serde::Deserialize;
use widget::wire::{Theme, WidgetBoot};

use crate::db;
use crate::state::AppState;

const LOADER_JS: &str = include_str!("embed/loader.js");

pub fn router() -> Router<AppState> {
    Router::new().route("/embed.js", get(loader)).route("/widget", get(widget_page))
}

async fn loader() -> Response {
    (
        [(header::CONTENT_TYPE, "text/javascript; charset=utf-8"), (header::CACHE_CONTROL, "public, max-age=300")],
        LOADER_JS,
    )
        .into_response()
}

#[derive(Deserialize)]
struct WidgetQuery {
    ws: Option<String>,
    theme: Option<String>,
    accent: Option<String>,
    radius: Option<String>,
    font: Option<String>,
}

/// The widget, server-rendered and hydrated. Carries no token: the loader
/// hands one over by `postMessage` once the frame says it is ready.
async fn widget_page(State(state): State<AppState>, Query(query): Query<WidgetQuery>, request: Request) -> Response {
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
        demo_model: state.engine.model.is_demo,
        title: workspace.name.clone(),
        theme: Theme::parse(
            query.theme.as_deref(),
            query.accent.as_deref(),
            query.radius.as_deref(),
            query.font.as_deref(),
        ),
        token: None,
        caddie: None,
    };
    render_widget(&state, boot, &allowed_origins, request).await
}

/// Renders the widget app with `boot`, under a nonce CSP that lets only
/// `ancestors` (and this origin) frame it.
pub async fn render_widget(state: &AppState, boot: WidgetBoot, ancestors: &[String], request: Request) -> Response {
    let nonce = leptos::nonce::Nonce::new();
    let csp = content_security_policy(&nonce.to_string(), ancestors);
    let options = state.leptos_options.clone();
    let handler = leptos_axum::render_app_to_stream_with_context(
        {
            let nonce = nonce.clone();
            move || {
                provide_context(nonce.clone());
                provide_context(boot.clone());
            }
        },
        move || widget::shell(options.clone()),
    );
    let mut response = handler(request).await;
    let headers = response.headers_mut();
    match HeaderValue::from_str(&csp) {
        Ok(value) => {
            headers.insert(header::CONTENT_SECURITY_POLICY, value);
        }
        Err(_) => return StatusCode::INTERNAL_SERVER_ERROR.into_response(),
    }
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// Scripts only from this origin or with the nonce; framing only by the
/// workspace's pages (each origin was validated when the workspace was made).
pub fn content_security_policy(nonce: &str, allowed_origins: &[String]) -> String {
    let ancestors: Vec<&str> = allowed_origins
        .iter()
        .map(String::as_str)
        .filter(|o| o.bytes().all(|b| b.is_ascii_graphic() && b != b';' && b != b','))
        .collect();
    format!(
        "default-src 'none'; script-src 'self' 'nonce-{nonce}' 'wasm-unsafe-eval'; style-src 'self' 'nonce-{nonce}'; \
         img-src 'self' https:; connect-src 'self'; base-uri 'none'; form-action 'none'; \
         frame-ancestors 'self' {}",
        ancestors.join(" ")
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn hostile_origins_cannot_inject_directives() {
        let csp = super::content_security_policy("n", &["https://ok.example".into(), "https://x; script-src *".into()]);
        assert!(csp.ends_with("frame-ancestors 'self' https://ok.example"), "{csp}");
    }
}
