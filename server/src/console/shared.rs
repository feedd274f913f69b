//! What the console's pages share: the state, sessions and the requests
//! that carry them ([`Signed`], [`InWorkspace`]), the API called in
//! process, and rendering.

use std::sync::Arc;

use ::console::{Body as PageBody, Notice, Page};
use axum::Router;
use axum::body::Body;
use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, Method, Request, StatusCode, header};
use axum::response::{Html, IntoResponse, Redirect, Response};
use leptos::prelude::*;
use serde::Deserialize;
use serde_json::Value;
use tower::ServiceExt;

use crate::client_addr::ClientAddr;
use crate::crypto::{Vault, hash_api_key};
use crate::db::{self, Pool};
use crate::limits::Limits;
use crate::secret::Secret;

/// How long a console session lasts.
pub(super) const SESSION_SECS: i64 = 8 * 60 * 60;
/// The largest API answer the console reads.
pub(super) const MAX_ANSWER_BYTES: usize = 4 * 1024 * 1024;
/// The console's own script and WASM only (no inline script), its own
/// styles, frames of its own origin (the preview), and no framing by anyone.
pub(super) const CSP: &str = "default-src 'none'; script-src 'self' 'wasm-unsafe-eval'; connect-src 'self'; \
                   style-src 'self'; img-src 'self'; form-action 'self'; frame-src 'self'; frame-ancestors 'none'; \
                   base-uri 'none'";

/// What the console's routes share.
#[derive(Clone)]
pub struct ConsoleState {
    pub pool: Pool,
    pub vault: Vault,
    /// The public API, called in process.
    pub api: Router,
    /// `CA_ADMIN_TOKEN`, if set: signing in with it creates workspaces.
    pub admin_token: Option<Secret>,
    /// The assistant's origin as browsers see it (`CA_PUBLIC_URL`).
    pub public_origin: Arc<str>,
    /// Renders the widget page (the live preview).
    pub pages: crate::widget_page::WidgetPages,
    /// Sign-in attempts per client address.
    pub limits: Limits,
}

/// The signed-in browser: the workspace it acts for (none: the operator)
/// and the credential to call the API with.
pub(super) struct Session {
    pub workspace_id: Option<String>,
    pub key: Secret,
    /// The hash of its cookie's token (its row).
    pub token_hash: String,
}

impl ConsoleState {
    pub(super) fn secure(&self, client: Option<&ClientAddr>) -> bool {
        self.public_origin.starts_with("https://") || client.is_some_and(|c| c.https)
    }

    /// The cookie's name: `__Host-` over https (no subdomain or plain-http
    /// page can plant or shadow it).
    pub(super) fn cookie_name(&self, client: Option<&ClientAddr>) -> &'static str {
        if self.secure(client) { "__Host-ca_console" } else { "ca_console" }
    }

    pub(super) fn cookie(&self, client: Option<&ClientAddr>, value: &str, max_age: i64) -> HeaderValue {
        let secure = if self.secure(client) { "; Secure" } else { "" };
        let name = self.cookie_name(client);
        HeaderValue::from_str(&format!("{name}={value}; Path=/; HttpOnly; SameSite=Strict; Max-Age={max_age}{secure}"))
            .expect("cookie values are ASCII")
    }

    pub(super) fn token(&self, headers: &HeaderMap, client: Option<&ClientAddr>) -> Option<String> {
        crate::http::cookie_value(headers, self.cookie_name(client))
    }

    pub(super) async fn session(&self, headers: &HeaderMap, client: Option<&ClientAddr>) -> Option<Session> {
        let token_hash = hash_api_key(&self.token(headers, client)?);
        let found = db::console::get(&self.pool, &token_hash, crate::ids::now_ms()).await;
        let row =
            found.map_err(|e| tracing::error!(error = format!("{e:#}"), "cannot read a console session")).ok()??;
        let key = self.vault.open(&row.sealed_key).ok()?;
        Some(Session { workspace_id: row.workspace_id, key, token_hash })
    }

    /// Whether a POST comes from our own pages: `Sec-Fetch-Site` says so,
    /// or — from a browser without Fetch Metadata — `Origin` is ours. A
    /// request with neither is no browser's, and carries no cookie to abuse.
    pub(super) fn is_from_our_pages(&self, headers: &HeaderMap) -> bool {
        let value = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
        match (value("sec-fetch-site"), value("origin")) {
            (Some(site), _) => site == "same-origin",
            (None, Some(origin)) => origin == &*self.public_origin,
            (None, None) => true,
        }
    }

    /// Sends a request to the public API in process, as `key`, from `client`.
    pub(super) async fn send(
        &self,
        method: Method,
        path: &str,
        key: &Secret,
        body: Option<Value>,
        accept: &str,
        client: Option<&ClientAddr>,
    ) -> Response {
        let mut request = Request::builder()
            .method(method)
            .uri(path)
            .header(header::AUTHORIZATION, format!("Bearer {}", key.expose()))
            .header(header::CONTENT_TYPE, "application/json")
            .header(header::ACCEPT, accept)
            .body(body.map_or_else(Body::empty, |b| Body::from(b.to_string())))
            .expect("the request builds");
        if let Some(client) = client {
            request.extensions_mut().insert(*client);
        }
        self.api.clone().oneshot(request).await.expect("the router is infallible")
    }
}

/// A request from a signed-in browser: a POST has come from our own pages.
pub(super) struct Signed {
    pub state: ConsoleState,
    pub client: Option<ClientAddr>,
    pub session: Session,
}

impl FromRequestParts<ConsoleState> for Signed {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &ConsoleState) -> Result<Self, Response> {
        let client = parts.extensions.get::<ClientAddr>().copied();
        if parts.method != Method::GET && !state.is_from_our_pages(&parts.headers) {
            return Err(refused_cross_site());
        }
        let Some(session) = state.session(&parts.headers, client.as_ref()).await else {
            return Err(signed_out(state, client.as_ref(), "Sign in first."));
        };
        Ok(Self { state: state.clone(), client, session })
    }
}

/// A [`Signed`] request of a workspace's session (the operator, who has
/// none, is sent to the operator's page).
pub(super) struct InWorkspace(Signed);

impl std::ops::Deref for InWorkspace {
    type Target = Signed;

    fn deref(&self) -> &Signed {
        &self.0
    }
}

impl std::ops::DerefMut for InWorkspace {
    fn deref_mut(&mut self) -> &mut Signed {
        &mut self.0
    }
}

impl FromRequestParts<ConsoleState> for InWorkspace {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &ConsoleState) -> Result<Self, Response> {
        let signed = Signed::from_request_parts(parts, state).await?;
        if signed.session.workspace_id.is_none() {
            return Err(Redirect::to("/console").into_response());
        }
        Ok(Self(signed))
    }
}

/// The public API's answer to one of the console's calls.
pub(super) struct Answer {
    pub status: StatusCode,
    pub json: Value,
}

impl Answer {
    pub(super) fn ok(&self) -> bool {
        self.status.is_success()
    }

    /// What the API said was wrong, as the page's notice.
    pub(super) fn problem(&self) -> Option<Notice> {
        problem(text(&self.json["error"]))
    }
}

impl Signed {
    pub(super) fn client(&self) -> Option<&ClientAddr> {
        self.client.as_ref()
    }

    /// Calls the public API in process with the session's credential.
    pub(super) async fn call(&self, method: Method, path: &str, body: Option<Value>) -> Result<Answer, Response> {
        let response = self.state.send(method, path, &self.session.key, body, "application/json", self.client()).await;
        let status = response.status();
        let bytes = axum::body::to_bytes(response.into_body(), MAX_ANSWER_BYTES).await.map_err(|e| {
            tracing::error!(error = %e, path, "console: cannot read the API's answer");
            failure("The console could not read the server's answer. Try again.")
        })?;
        Ok(Answer { status, json: serde_json::from_slice(&bytes).unwrap_or(Value::Null) })
    }

    /// Calls the public API in process with a body as it came (a file's
    /// multipart form).
    pub(super) async fn call_raw(
        &self,
        method: Method,
        path: &str,
        content_type: HeaderValue,
        body: Body,
    ) -> Result<Answer, Response> {
        let mut request = Request::builder()
            .method(method)
            .uri(path)
            .header(header::AUTHORIZATION, format!("Bearer {}", self.session.key.expose()))
            .header(header::CONTENT_TYPE, content_type)
            .header(header::ACCEPT, "application/json")
            .body(body)
            .expect("the request builds");
        if let Some(client) = self.client() {
            request.extensions_mut().insert(*client);
        }
        let response = self.state.api.clone().oneshot(request).await.expect("the router is infallible");
        let status = response.status();
        let bytes = axum::body::to_bytes(response.into_body(), MAX_ANSWER_BYTES).await.map_err(|e| {
            tracing::error!(error = %e, path, "console: cannot read the API's answer");
            failure("The console could not read the server's answer. Try again.")
        })?;
        Ok(Answer { status, json: serde_json::from_slice(&bytes).unwrap_or(Value::Null) })
    }

    /// The workspace as the API shows it; a key that no longer works ends
    /// the session.
    pub(super) async fn workspace(&self) -> Result<Value, Response> {
        let answer = self.call(Method::GET, "/v1/workspace", None).await?;
        if !answer.ok() {
            return Err(signed_out(&self.state, self.client(), "Your session's key no longer works. Sign in again."));
        }
        Ok(answer.json)
    }

    /// The sign-in page with `message`, the cookie cleared.
    pub(super) fn signed_out(&self, message: &str) -> Response {
        signed_out(&self.state, self.client(), message)
    }
}

pub(super) fn text(value: &Value) -> String {
    value.as_str().unwrap_or_default().to_owned()
}

pub(super) fn strings(value: &Value) -> Option<Vec<String>> {
    Some(value.as_array()?.iter().filter_map(Value::as_str).map(str::to_owned).collect())
}

/// A page, with the headers every console page carries.
pub(super) fn render(status: StatusCode, page: Page) -> Response {
    let html = Owner::new().with(|| ::console::document(page).to_html());
    let mut response = (status, Html(html)).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    // Our forms keep their `Origin` (under `no-referrer` a browser sends `Origin: null`).
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("same-origin"));
    response
}

/// A workspace's page: its title, the console's navigation.
pub(super) fn page(title: &str, signed_in: String, notice: Option<Notice>, body: PageBody) -> Page {
    Page { title: title.into(), signed_in: Some(signed_in), nav: true, notice, body }
}

pub(super) fn notice(text: impl Into<String>) -> Option<Notice> {
    Some(Notice { text: text.into(), error: false })
}

pub(super) fn problem(text: impl Into<String>) -> Option<Notice> {
    Some(Notice { text: text.into(), error: true })
}

/// A page that only says `message` went wrong (`502`).
pub(super) fn failure(message: &str) -> Response {
    render(
        StatusCode::BAD_GATEWAY,
        Page { title: "Something went wrong".into(), notice: problem(message), ..Page::default() },
    )
}

/// A page that refuses with `message`.
pub(super) fn refused(status: StatusCode, message: &str) -> Response {
    render(status, Page { title: "Refused".into(), notice: problem(message), ..Page::default() })
}

/// The sign-in page (`401`, with `message`), the cookie cleared.
pub(super) fn signed_out(state: &ConsoleState, client: Option<&ClientAddr>, message: &str) -> Response {
    let mut response =
        render(StatusCode::UNAUTHORIZED, Page { title: "Sign in".into(), notice: problem(message), ..Page::default() });
    response.headers_mut().insert(header::SET_COOKIE, state.cookie(client, "", 0));
    response
}

pub(super) fn refused_cross_site() -> Response {
    refused(StatusCode::FORBIDDEN, "This request did not come from the console's own pages, so nothing was done.")
}

/// What a page's `?done=` says (fixed words: nothing from the URL is shown).
#[derive(Deserialize)]
pub(super) struct Done {
    pub done: Option<String>,
}

impl Done {
    pub(super) fn notice(&self) -> Option<Notice> {
        match self.done.as_deref() {
            Some("saved") => notice("Saved."),
            Some("signed-in") => notice("Signed in."),
            Some("disconnected") => notice("Disconnected."),
            _ => None,
        }
    }
}

/// `value` as one escaped path segment (a `+` from the form encoding is a
/// space, and a literal `+` is `%2B`).
pub(super) fn segment(value: &str) -> String {
    url::form_urlencoded::byte_serialize(value.as_bytes()).collect::<String>().replace('+', "%20")
}

/// A query string of the pairs that have a value.
pub(super) fn query_of(pairs: &[(&str, &str)]) -> String {
    let mut query = url::form_urlencoded::Serializer::new(String::new());
    for (key, value) in pairs {
        if !value.is_empty() {
            query.append_pair(key, value);
        }
    }
    query.finish()
}

/// A `YYYY-MM-DD` day from a date field.
pub(super) fn day(value: &str, field: &str) -> Result<time::Date, String> {
    let format = time::macros::format_description!("[year]-[month]-[day]");
    time::Date::parse(value, &format).map_err(|_| format!("{field}: not a day (YYYY-MM-DD)"))
}

/// The API's `since`/`until` times for a range of days from the forms:
/// from the start of the first to the start of the day after the last
/// (the "to" day included); or what is wrong with them.
pub(super) fn day_range(since: &str, until: &str) -> Result<(String, String), String> {
    let since = if since.is_empty() { String::new() } else { format!("{}T00:00:00Z", day(since, "From")?) };
    let until = if until.is_empty() {
        String::new()
    } else {
        let after = day(until, "To")?.next_day().ok_or("To: the day is out of range")?;
        format!("{after}T00:00:00Z")
    };
    Ok((since, until))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_day_range_includes_its_last_day_and_names_a_bad_field() {
        assert_eq!(
            day_range("2026-11-01", "2026-11-30"),
            Ok(("2026-11-01T00:00:00Z".into(), "2026-12-01T00:00:00Z".into()))
        );
        assert_eq!(day_range("", ""), Ok((String::new(), String::new())));
        assert_eq!(day_range("2026-13-01", ""), Err("From: not a day (YYYY-MM-DD)".into()));
        assert_eq!(day_range("", "9999-12-31"), Err("To: the day is out of range".into()));
    }

    #[test]
    fn a_segment_escapes_every_reserved_byte() {
        assert_eq!(segment("a b+c/d?e"), "a%20b%2Bc%2Fd%3Fe");
    }
}
