//! The pages of a launch that does not end in the app (§8): plain HTML,
//! readable at 375 px, every inserted value escaped, nothing from a token
//! echoed except through the escaping.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use widget::html::escape as esc;

const CSP: &str = "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; \
                   frame-ancestors 'self'; base-uri 'none'";

/// A page with the headers every Caddie page carries.
pub fn page(status: StatusCode, title: &str, body: &str) -> Response {
    let html = format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{title}</title><link rel=\"stylesheet\" href=\"/caddie.css\"></head>\
         <body><main class=\"caddie-page\"><h1>{title}</h1>{body}</main></body></html>",
        title = esc(title)
    );
    let mut response = no_store((status, Html(html)).into_response());
    // Nothing of our URLs goes to another site, and our own forms keep
    // their `Origin` (under `no-referrer` a browser sends `Origin: null`).
    response.headers_mut().insert(header::REFERRER_POLICY, HeaderValue::from_static("same-origin"));
    response
}

/// No caching, no Referer, no framing by others.
pub fn no_store(mut response: Response) -> Response {
    let headers = response.headers_mut();
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    headers.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
    response
}

fn button(href: &str, label: &str) -> String {
    format!("<p><a class=\"button\" href=\"{}\">{}</a></p>", esc(href), esc(label))
}

/// An expired or already used link: one button to a fresh one.
pub fn link_expired(hub: &url::Url, assignment_id: &str) -> Response {
    let fresh = format!("{}go/{}", hub.as_str(), assignment_id);
    page(
        StatusCode::UNAUTHORIZED,
        "Link expired",
        &format!(
            "<p>This link has already been used or is too old. Open it again from Caddie to get a fresh one.</p>{}",
            button(&fresh, "Open again from Caddie")
        ),
    )
}

/// A link that did not come from the hub: nothing in it is trusted.
pub fn invalid_link(hub: &url::Url) -> Response {
    page(
        StatusCode::UNAUTHORIZED,
        "This link is not valid",
        &format!("<p>Open this tool from your project in Caddie.</p>{}", button(hub.as_str(), "Back to Caddie")),
    )
}

pub fn version_mismatch(hub: &url::Url) -> Response {
    page(
        StatusCode::CONFLICT,
        "Temporarily unavailable",
        &format!(
            "<p>This tool and Caddie are being updated. Please try again later.</p>{}",
            button(hub.as_str(), "Back to Caddie")
        ),
    )
}

/// Signed in as someone else than the link's user: names nobody. Its
/// Switch account form signs out here, then goes to the identity provider
/// (`idp_origin`), which `form-action` must allow: the browser checks it
/// on the form's redirects too.
pub fn different_user(back: &str, switch_next: &str, idp_origin: &str) -> Response {
    let mut response = page(
        StatusCode::FORBIDDEN,
        "This link was prepared for a different user.",
        &format!(
            "<p>You are signed in with another account than the one this link was made for.</p>\
             <form method=\"post\" action=\"/caddie/logout\"><input type=\"hidden\" name=\"next\" value=\"{}\">\
             <p><button type=\"submit\" class=\"button\">Switch account</button></p></form>{}",
            esc(switch_next),
            button(back, "Back to Caddie")
        ),
    );
    let csp = CSP.replace("form-action 'self'", &format!("form-action 'self' {idp_origin}"));
    if let Ok(value) = HeaderValue::from_str(&csp) {
        response.headers_mut().insert(header::CONTENT_SECURITY_POLICY, value);
    }
    response
}

pub fn no_access(back: &str) -> Response {
    page(
        StatusCode::FORBIDDEN,
        "You no longer have access",
        &format!("<p>Your access to this space has ended or was never granted.</p>{}", button(back, "Back to Caddie")),
    )
}

pub fn not_ready(back: &str) -> Response {
    page(
        StatusCode::NOT_FOUND,
        "Not ready yet",
        &format!("<p>This space has not been set up yet.</p>{}", button(back, "Back to Caddie")),
    )
}

/// A state-changing request from another site's page.
pub fn forbidden_request() -> Response {
    page(StatusCode::FORBIDDEN, "Not allowed", "<p>This request did not come from this site's own pages.</p>")
}

pub fn sign_in_failed(retry: &str) -> Response {
    page(
        StatusCode::BAD_GATEWAY,
        "Sign-in did not work",
        &format!("<p>The sign-in could not be completed.</p>{}", button(retry, "Try again")),
    )
}

pub fn signed_out(hub: &url::Url) -> Response {
    page(
        StatusCode::OK,
        "Signed out",
        &format!("<p>You are signed out of the assistant.</p>{}", button(hub.as_str(), "Back to Caddie")),
    )
}
