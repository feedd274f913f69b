//! Rendering the widget app as a page: server-side by Leptos, hydrated in
//! the browser, under a per-response nonce and a CSP whose
//! `frame-ancestors` lists who may frame it. Both the embed (`/widget`) and
//! Caddie's full-page space render through here.

use axum::extract::Request;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use leptos::config::LeptosOptions;
use leptos::prelude::provide_context;
use widget::wire::i18n;
use widget::wire::{Welcome, WidgetBoot};

/// Renders the widget page.
#[derive(Clone)]
pub struct WidgetPages {
    options: LeptosOptions,
    /// True when the built-in offline demo model answers (the widget says so).
    pub demo_model: bool,
}

impl WidgetPages {
    pub fn new(options: LeptosOptions, demo_model: bool) -> Self {
        Self { options, demo_model }
    }

    /// Renders the widget app with `boot`, under a nonce CSP that lets only
    /// `ancestors` (and this origin) frame it. The page speaks the
    /// language `boot.lang` names when the widget speaks it (the host's
    /// choice), else the browser's (`Accept-Language`), else English; it
    /// carries that language's words and the workspace's start screen in
    /// it (`welcome`).
    pub async fn render(
        &self,
        mut boot: WidgetBoot,
        welcome: &Welcome,
        ancestors: &[String],
        request: Request,
    ) -> Response {
        let accept_language = request.headers().get(header::ACCEPT_LANGUAGE).and_then(|v| v.to_str().ok());
        let lang = i18n::negotiate(Some(&boot.lang), accept_language);
        boot.lang = lang.to_owned();
        boot.words = i18n::words(lang);
        let screen = welcome.of(lang).cloned().unwrap_or_default();
        boot.greeting = screen.greeting;
        boot.prompts = screen.prompts;
        let nonce = leptos::nonce::Nonce::new();
        let csp = content_security_policy(&nonce.to_string(), ancestors);
        let options = self.options.clone();
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
        headers.insert(header::VARY, HeaderValue::from_static("Accept-Language"));
        // A cross-origin-isolated host (COEP require-corp) may frame only a
        // document that is isolated too and consents to being embedded: the
        // widget loads its own files from its origin and the cards' images
        // without credentials (`credentialless`), and it is still framed
        // only by the origins of `frame-ancestors`.
        headers.insert(
            header::HeaderName::from_static("cross-origin-embedder-policy"),
            HeaderValue::from_static("credentialless"),
        );
        headers.insert(
            header::HeaderName::from_static("cross-origin-resource-policy"),
            HeaderValue::from_static("cross-origin"),
        );
        response
    }
}

/// Scripts only from this origin or with the nonce; framing only by the
/// workspace's pages (each origin was validated when the workspace was made).
pub fn content_security_policy(nonce: &str, allowed_origins: &[String]) -> String {
    format!(
        "default-src 'none'; script-src 'self' 'nonce-{nonce}' 'wasm-unsafe-eval'; style-src 'self' 'nonce-{nonce}'; \
         img-src 'self' https: blob:; connect-src 'self'; frame-src 'self'; base-uri 'none'; form-action 'none'; \
         frame-ancestors {}",
        frame_ancestors(allowed_origins)
    )
}

/// `frame-ancestors`' sources: this origin and the workspace's pages, none
/// that could end the directive.
pub fn frame_ancestors(allowed_origins: &[String]) -> String {
    let mut sources = String::from("'self'");
    for origin in allowed_origins {
        if origin.bytes().all(|b| b.is_ascii_graphic() && b != b';' && b != b',') {
            sources.push(' ');
            sources.push_str(origin);
        }
    }
    sources
}

#[cfg(test)]
mod tests {
    #[test]
    fn hostile_origins_cannot_inject_directives() {
        let csp = super::content_security_policy("n", &["https://ok.example".into(), "https://x; script-src *".into()]);
        assert!(csp.ends_with("frame-ancestors 'self' https://ok.example"), "{csp}");
    }
}
