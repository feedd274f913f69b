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

/// Where a Caddie page is shown: a top-level page, or inside the hub's
/// project page (embed mode, caddie-tool-contract-ct1.md §9), where a
/// button to the hub would open the hub inside its own frame. Embedded
/// pages let the hub frame them, tell it their height over the
/// `caddie-embed` bus (`/caddie-embed.js`), and sign in through a popup.
#[derive(Clone, Copy)]
pub enum Surface<'a> {
    Page(&'a url::Url),
    Embed(&'a url::Url),
}

/// The popup's sign-in: it ends on `/caddie/embed/signed-in`, which tells
/// the frame that opened it.
pub const POPUP_SIGN_IN: &str = "/caddie/login?interactive=1&next=%2Fcaddie%2Fembed%2Fsigned-in";

impl Surface<'_> {
    pub fn is_embed(self) -> bool {
        matches!(self, Surface::Embed(_))
    }

    /// A used or expired link: framed, the hub is asked for a fresh one (`relaunch`).
    pub fn link_expired(self, assignment_id: &str) -> Response {
        match self {
            Surface::Page(hub) => link_expired(hub, assignment_id),
            Surface::Embed(hub) => embed(
                hub,
                StatusCode::UNAUTHORIZED,
                "Link expired",
                "<p>Getting a fresh link from Caddie…</p>\
                 <p><button type=\"button\" class=\"button\" data-relaunch>Try again</button></p>",
                EmbedPage { event: Some("relaunch"), ..EmbedPage::default() },
            ),
        }
    }

    pub fn invalid_link(self) -> Response {
        match self {
            Surface::Page(hub) => invalid_link(hub),
            Surface::Embed(hub) => embed(
                hub,
                StatusCode::UNAUTHORIZED,
                "This link is not valid",
                "<p>Open this tool from your project in Caddie.</p>",
                EmbedPage::default(),
            ),
        }
    }

    pub fn version_mismatch(self) -> Response {
        match self {
            Surface::Page(hub) => version_mismatch(hub),
            Surface::Embed(hub) => embed(
                hub,
                StatusCode::CONFLICT,
                "Temporarily unavailable",
                "<p>This tool and Caddie are being updated. Please try again later.</p>",
                EmbedPage::default(),
            ),
        }
    }

    pub fn no_access(self, back: &str) -> Response {
        match self {
            Surface::Page(_) => no_access(back),
            Surface::Embed(hub) => embed(
                hub,
                StatusCode::FORBIDDEN,
                "You no longer have access",
                "<p>Your access to this space has ended or was never granted.</p>",
                EmbedPage::default(),
            ),
        }
    }

    pub fn not_ready(self, back: &str) -> Response {
        match self {
            Surface::Page(_) => not_ready(back),
            Surface::Embed(hub) => embed(
                hub,
                StatusCode::NOT_FOUND,
                "Not ready yet",
                "<p>This space has not been set up yet.</p>",
                EmbedPage::default(),
            ),
        }
    }

    /// Signed in as someone else than the link's user (names nobody).
    /// Framed, Switch account happens in a popup: the form posts into it.
    pub fn different_user(self, back: &str, here: &str, idp_origin: &str) -> Response {
        let Surface::Embed(hub) = self else {
            let switch = format!(
                "/caddie/login?switch=1&next={}",
                url::form_urlencoded::byte_serialize(here.as_bytes()).collect::<String>()
            );
            return different_user(back, &switch, idp_origin);
        };
        let switch = format!("/caddie/login?switch=1&next={}", "%2Fcaddie%2Fembed%2Fsigned-in");
        embed(
            hub,
            StatusCode::FORBIDDEN,
            "This link was prepared for a different user.",
            &format!(
                "<p>You are signed in with another account than the one this link was made for.</p>\
                 <form method=\"post\" action=\"/caddie/logout\" target=\"ca-sign-in\" data-popup-form>\
                 <input type=\"hidden\" name=\"next\" value=\"{}\">\
                 <p><button type=\"submit\" class=\"button\">Switch account</button></p></form>",
                esc(&switch)
            ),
            EmbedPage { resume: Some(here), form_action: Some(idp_origin), ..EmbedPage::default() },
        )
    }

    /// The sign-in did not complete: try again (framed, in a popup).
    pub fn sign_in_failed(self, retry: &str, resume: &str) -> Response {
        match self {
            Surface::Page(_) => sign_in_failed(retry),
            Surface::Embed(hub) => sign_in_card(hub, StatusCode::BAD_GATEWAY, "Sign-in did not work", resume),
        }
    }
}

/// The in-frame sign-in (§9): the identity provider needs the user, and a
/// password is never typed inside a frame — one button opens the sign-in in
/// a popup; once it says so, the frame goes on to `resume`.
pub fn sign_in_card(hub: &url::Url, status: StatusCode, title: &str, resume: &str) -> Response {
    embed(
        hub,
        status,
        title,
        &format!(
            "<p>Sign in to use the assistant here. The sign-in opens in a small window.</p>\
             <p><button type=\"button\" class=\"button\" data-popup=\"{}\">Sign in</button></p>\
             <p class=\"caddie-note\" data-popup-blocked hidden>Your browser blocked the window: allow pop-ups \
             for this site, then press Sign in again.</p>",
            esc(POPUP_SIGN_IN)
        ),
        EmbedPage { event: Some("needs-auth"), resume: Some(resume), ..EmbedPage::default() },
    )
}

/// What an embedded page says beyond its text.
#[derive(Default)]
pub struct EmbedPage<'a> {
    /// A bus event sent once the page loads (`relaunch`, `needs-auth`).
    pub event: Option<&'a str>,
    /// Where the frame goes once the popup's sign-in is done (our path).
    pub resume: Option<&'a str>,
    /// Another origin a form here may lead to (the identity provider).
    pub form_action: Option<&'a str>,
}

/// An embedded page: framed by the hub only (besides ourselves), no
/// fixed elements, and `/caddie-embed.js` for the bus.
pub fn embed(hub: &url::Url, status: StatusCode, title: &str, body: &str, extra: EmbedPage<'_>) -> Response {
    let hub_origin = hub.origin().ascii_serialization();
    let attr = |name: &str, value: Option<&str>| value.map(|v| format!(" {name}=\"{}\"", esc(v))).unwrap_or_default();
    let html = format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <meta name=\"ca-hub\" content=\"{hub}\"><title>{title}</title>\
         <link rel=\"stylesheet\" href=\"/caddie.css\"><script src=\"/caddie-embed.js\" defer></script></head>\
         <body class=\"caddie-embedded\"{event}{resume}><main class=\"caddie-page\"><h1>{title}</h1>{body}</main></body></html>",
        hub = esc(&hub_origin),
        title = esc(title),
        event = attr("data-event", extra.event),
        resume = attr("data-resume", extra.resume),
    );
    let mut response = no_store((status, Html(html)).into_response());
    let form_action = extra.form_action.map(|o| format!(" {o}")).unwrap_or_default();
    let csp = format!(
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; \
         form-action 'self'{form_action}; frame-ancestors 'self' {hub_origin}; base-uri 'none'"
    );
    let headers = response.headers_mut();
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("same-origin"));
    if let Ok(value) = HeaderValue::from_str(&csp) {
        headers.insert(header::CONTENT_SECURITY_POLICY, value);
    }
    response
}

/// The embed's entry (`/embed#lt=`): `/caddie-embed.js` reads the token
/// from the fragment, which never reaches a server, and redeems it.
pub fn embed_entry(hub: &url::Url) -> Response {
    embed(
        hub,
        StatusCode::OK,
        "Opening the assistant…",
        "<p data-status aria-live=\"polite\">One moment.</p>\
         <p><button type=\"button\" class=\"button\" data-relaunch hidden>Try again</button></p>",
        EmbedPage::default(),
    )
}

/// The end of the popup's sign-in: tells the frame that opened it, then
/// closes (top level; framed by nobody else).
pub fn popup_signed_in() -> Response {
    let html = "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
                <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
                <title>Signed in</title><link rel=\"stylesheet\" href=\"/caddie.css\">\
                <script src=\"/caddie-embed.js\" defer></script></head>\
                <body data-signed-in><main class=\"caddie-page\"><h1>Signed in</h1>\
                <p>You are signed in. You can close this window.</p></main></body></html>";
    let mut response = no_store((StatusCode::OK, Html(html)).into_response());
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; form-action 'none'; \
             frame-ancestors 'self'; base-uri 'none'",
        ),
    );
    response
}
