//! `/console`: the host's console (pages in the `console` crate). Every
//! form calls the public API in process with the credential the session
//! signed in with, so the console can do exactly what the API allows and
//! nothing more; the credential stays on the server, sealed.
//!
//! - Sessions: a random token in an `HttpOnly`, `SameSite=Strict` cookie
//!   (`__Host-ca_console`, `Secure`, whenever the browser came over https),
//!   stored as its hash, eight hours.
//! - Every POST must come from our own pages (Fetch Metadata, else
//!   `Origin`): another site's form — sign-in included — is refused.
//! - No page is framable (`frame-ancestors 'none'`, `X-Frame-Options`),
//!   cached, or runs script.

use std::sync::Arc;

use ::console::{
    Admin, Audit, AuditEntry, AuditFilters, Body as PageBody, ConversationItem, Conversations, Created, Notice,
    Onboarding, Operations, Page, Rule, Theme, ToolServer, Transcript, TranscriptMessage,
};
use axum::body::Body;
use axum::extract::{Form, Query, State};
use axum::http::{HeaderMap, HeaderValue, Method, Request, StatusCode, header};
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::{Extension, Router};
use leptos::prelude::*;
use serde::Deserialize;
use serde_json::{Value, json};
use tower::ServiceExt;

use crate::client_addr::ClientAddr;
use crate::crypto::{Vault, hash_api_key};
use crate::db::{self, Pool};
use crate::secret::Secret;

/// How long a console session lasts.
const SESSION_SECS: i64 = 8 * 60 * 60;
/// The largest API answer the console reads.
const MAX_ANSWER_BYTES: usize = 4 * 1024 * 1024;
const CSP: &str = "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; \
                   frame-src 'self'; frame-ancestors 'none'; base-uri 'none'";
/// The preview's token lives this long (a page reload makes a new one).
const PREVIEW_TOKEN_SECS: i64 = 3600;
/// Who the preview chats as: its turns are real, and listed under this user.
pub const PREVIEW_USER: &str = "console-preview";

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
}

pub fn router(state: ConsoleState) -> Router {
    Router::new()
        .route("/console", get(home))
        .route("/console/sign-in", post(sign_in))
        .route("/console/sign-out", post(sign_out))
        .route("/console/workspaces", post(create_workspace))
        .route("/console/workspace", post(save_workspace))
        .route("/console/connect", post(connect))
        .route("/console/check", post(check))
        .route("/console/theme", post(save_theme))
        .route("/console/audit", get(audit))
        .route("/console/audit/export", get(export_audit))
        .route("/console/operations", get(operations))
        .route("/console/preview", get(preview))
        .route("/console/conversations", get(conversations))
        .route("/console/conversations/{id}", get(conversation))
        .route("/console/rotate/embed-secret", post(rotate_embed_secret))
        .route("/console/rotate/api-key", post(rotate_api_key))
        .route("/console/retention", post(save_retention))
        .route("/console/erase", post(erase_user))
        .with_state(state)
}

/// The signed-in browser: the workspace it acts for (none: the operator)
/// and the credential to call the API with.
struct Session {
    workspace_id: Option<String>,
    key: Secret,
    /// The hash of its cookie's token (its row).
    token_hash: String,
}

impl ConsoleState {
    fn secure(&self, client: Option<&ClientAddr>) -> bool {
        self.public_origin.starts_with("https://") || client.is_some_and(|c| c.https)
    }

    /// The cookie's name: `__Host-` over https (no subdomain or plain-http
    /// page can plant or shadow it).
    fn cookie_name(&self, client: Option<&ClientAddr>) -> &'static str {
        if self.secure(client) { "__Host-ca_console" } else { "ca_console" }
    }

    fn cookie(&self, client: Option<&ClientAddr>, value: &str, max_age: i64) -> HeaderValue {
        let secure = if self.secure(client) { "; Secure" } else { "" };
        let name = self.cookie_name(client);
        HeaderValue::from_str(&format!("{name}={value}; Path=/; HttpOnly; SameSite=Strict; Max-Age={max_age}{secure}"))
            .expect("cookie values are ASCII")
    }

    fn token(&self, headers: &HeaderMap, client: Option<&ClientAddr>) -> Option<String> {
        crate::http::cookie_value(headers, self.cookie_name(client))
    }

    async fn session(&self, headers: &HeaderMap, client: Option<&ClientAddr>) -> Option<Session> {
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
    fn is_from_our_pages(&self, headers: &HeaderMap) -> bool {
        let value = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
        match (value("sec-fetch-site"), value("origin")) {
            (Some(site), _) => site == "same-origin",
            (None, Some(origin)) => origin == &*self.public_origin,
            (None, None) => true,
        }
    }

    /// Sends a request to the public API in process, as `key`, from `client`.
    async fn send(
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

    /// Calls the public API in process, as `key`, from `client`: the
    /// status and the JSON answer.
    async fn call(
        &self,
        method: Method,
        path: &str,
        key: &Secret,
        body: Option<Value>,
        client: Option<&ClientAddr>,
    ) -> Result<(StatusCode, Value), Response> {
        let response = self.send(method, path, key, body, "application/json", client).await;
        let status = response.status();
        let bytes = axum::body::to_bytes(response.into_body(), MAX_ANSWER_BYTES).await.map_err(|e| {
            tracing::error!(error = %e, path, "console: cannot read the API's answer");
            failure("The console could not read the server's answer. Try again.")
        })?;
        Ok((status, serde_json::from_slice(&bytes).unwrap_or(Value::Null)))
    }

    /// The onboarding page of the session's workspace, with `notice` and
    /// the checker's `report`.
    async fn onboarding(
        &self,
        session: &Session,
        client: Option<&ClientAddr>,
        notice: Option<Notice>,
        report: Option<Vec<Rule>>,
    ) -> Result<Page, Response> {
        let (status, workspace) = self.call(Method::GET, "/v1/workspace", &session.key, None, client).await?;
        if status != StatusCode::OK {
            return Err(signed_out(self, client, "Your session's key no longer works. Sign in again."));
        }
        let (_, integrations) = self.call(Method::GET, "/v1/integrations", &session.key, None, client).await?;
        let tool_server = integrations["integrations"].get(0).map(|integration| ToolServer {
            base_url: text(&integration["base_url"]),
            allowed_tools: strings(&integration["allowed_tools"]).unwrap_or_default(),
            listed: None,
        });
        Ok(Page {
            title: "Set up your assistant".into(),
            signed_in: Some(text(&workspace["name"])),
            nav: true,
            notice,
            body: PageBody::Onboarding(Onboarding {
                workspace_id: text(&workspace["id"]),
                name: text(&workspace["name"]),
                allowed_origins: strings(&workspace["allowed_origins"]).unwrap_or_default(),
                tool_server,
                report,
                theme: Theme {
                    mode: workspace["theme"]["mode"].as_str().map(str::to_owned),
                    accent: workspace["theme"]["accent"].as_str().map(str::to_owned),
                    radius: workspace["theme"]["radius"].as_u64().and_then(|r| u8::try_from(r).ok()),
                    font: workspace["theme"]["font"].as_str().map(str::to_owned),
                },
                entered_base_url: None,
                assistant_origin: self.public_origin.to_string(),
            }),
        })
    }
}

fn text(value: &Value) -> String {
    value.as_str().unwrap_or_default().to_owned()
}

fn strings(value: &Value) -> Option<Vec<String>> {
    Some(value.as_array()?.iter().filter_map(Value::as_str).map(str::to_owned).collect())
}

/// A page, with the headers every console page carries.
fn render(status: StatusCode, page: Page) -> Response {
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

fn notice(text: impl Into<String>) -> Option<Notice> {
    Some(Notice { text: text.into(), error: false })
}

fn problem(text: impl Into<String>) -> Option<Notice> {
    Some(Notice { text: text.into(), error: true })
}

fn failure(message: &str) -> Response {
    render(
        StatusCode::BAD_GATEWAY,
        Page { title: "Something went wrong".into(), notice: problem(message), ..Page::default() },
    )
}

/// The sign-in page (status `status`, with `message`), the cookie cleared.
fn signed_out(state: &ConsoleState, client: Option<&ClientAddr>, message: &str) -> Response {
    let mut response =
        render(StatusCode::UNAUTHORIZED, Page { title: "Sign in".into(), notice: problem(message), ..Page::default() });
    response.headers_mut().insert(header::SET_COOKIE, state.cookie(client, "", 0));
    response
}

fn refused_cross_site() -> Response {
    render(
        StatusCode::FORBIDDEN,
        Page {
            title: "Refused".into(),
            notice: problem("This request did not come from the console's own pages, so nothing was done."),
            ..Page::default()
        },
    )
}

/// What a page's `?done=` says (fixed words: nothing from the URL is shown).
#[derive(Deserialize)]
struct Done {
    done: Option<String>,
}

async fn home(
    State(state): State<ConsoleState>,
    client: Option<Extension<ClientAddr>>,
    headers: HeaderMap,
    Query(done): Query<Done>,
) -> Response {
    let client = client.as_deref();
    let Some(session) = state.session(&headers, client).await else {
        return render(StatusCode::OK, Page { title: "Sign in".into(), ..Page::default() });
    };
    if session.workspace_id.is_none() {
        return render(StatusCode::OK, admin_page(None));
    }
    let said = match done.done.as_deref() {
        Some("saved") => notice("Saved."),
        Some("signed-in") => notice("Signed in."),
        _ => None,
    };
    match state.onboarding(&session, client, said, None).await {
        Ok(page) => render(StatusCode::OK, page),
        Err(response) => response,
    }
}

fn admin_page(created: Option<Created>) -> Page {
    let notice = created.as_ref().map(|c| Notice { text: format!("Created “{}”.", c.name), error: false });
    Page {
        title: "Workspaces".into(),
        signed_in: Some("Operator".into()),
        nav: false,
        notice,
        body: PageBody::Admin(Admin { created }),
    }
}

#[derive(Deserialize)]
struct SignIn {
    key: String,
}

async fn sign_in(
    State(state): State<ConsoleState>,
    client: Option<Extension<ClientAddr>>,
    headers: HeaderMap,
    Form(form): Form<SignIn>,
) -> Response {
    let client = client.as_deref();
    if !state.is_from_our_pages(&headers) {
        return refused_cross_site();
    }
    let key = form.key.trim();
    let workspace_id = if state.admin_token.as_ref().is_some_and(|admin| admin.matches(key)) {
        None
    } else {
        match db::workspace_by_api_key_hash(&state.pool, &hash_api_key(key), crate::ids::now_ms()).await {
            Ok(Some((id, _))) => Some(id),
            Ok(None) => return signed_out(&state, client, "That key is not a workspace's api key or the admin token."),
            Err(e) => {
                tracing::error!(error = format!("{e:#}"), "console: cannot look up an api key");
                return failure("The console could not check the key. Try again.");
            }
        }
    };
    let token = hex::encode(crate::ids::random_bytes::<32>());
    let now = crate::ids::now_ms();
    let sealed = state.vault.seal(key);
    let stored = db::console::insert(
        &state.pool,
        &hash_api_key(&token),
        workspace_id.as_deref(),
        &sealed,
        now,
        now + SESSION_SECS * 1000,
    )
    .await;
    if let Err(e) = stored {
        tracing::error!(error = format!("{e:#}"), "console: cannot store a session");
        return failure("The console could not sign you in. Try again.");
    }
    tracing::info!(workspace_id = workspace_id.as_deref().unwrap_or("(operator)"), "console: signed in");
    let mut response = Redirect::to("/console?done=signed-in").into_response();
    response.headers_mut().insert(header::SET_COOKIE, state.cookie(client, &token, SESSION_SECS));
    response
}

async fn sign_out(
    State(state): State<ConsoleState>,
    client: Option<Extension<ClientAddr>>,
    headers: HeaderMap,
) -> Response {
    let client = client.as_deref();
    if !state.is_from_our_pages(&headers) {
        return refused_cross_site();
    }
    if let Some(token) = state.token(&headers, client)
        && let Err(e) = db::console::delete(&state.pool, &hash_api_key(&token)).await
    {
        tracing::error!(error = format!("{e:#}"), "console: cannot end a session");
    }
    let mut response = Redirect::to("/console").into_response();
    response.headers_mut().insert(header::SET_COOKIE, state.cookie(client, "", 0));
    response
}

/// The session of a console POST, or the answer that refuses it.
async fn posting(state: &ConsoleState, headers: &HeaderMap, client: Option<&ClientAddr>) -> Result<Session, Response> {
    if !state.is_from_our_pages(headers) {
        return Err(refused_cross_site());
    }
    state.session(headers, client).await.ok_or_else(|| signed_out(state, client, "Sign in first."))
}

/// Lines of a textarea, trimmed, without the empty ones.
fn lines(text: &str) -> Vec<String> {
    text.lines().map(str::trim).filter(|l| !l.is_empty()).map(str::to_owned).collect()
}

#[derive(Deserialize)]
struct NewWorkspace {
    name: String,
    #[serde(default)]
    origins: String,
}

async fn create_workspace(
    State(state): State<ConsoleState>,
    client: Option<Extension<ClientAddr>>,
    headers: HeaderMap,
    Form(form): Form<NewWorkspace>,
) -> Response {
    let client = client.as_deref();
    let session = match posting(&state, &headers, client).await {
        Ok(session) => session,
        Err(refused) => return refused,
    };
    if session.workspace_id.is_some() {
        return render(
            StatusCode::FORBIDDEN,
            Page {
                title: "Refused".into(),
                notice: problem("Only the operator creates workspaces."),
                ..Page::default()
            },
        );
    }
    let body = json!({ "name": form.name, "allowed_origins": lines(&form.origins) });
    match state.call(Method::POST, "/v1/workspaces", &session.key, Some(body), client).await {
        Ok((StatusCode::CREATED, created)) => render(
            StatusCode::OK,
            admin_page(Some(Created {
                id: text(&created["id"]),
                name: created["name"].as_str().unwrap_or(form.name.trim()).to_owned(),
                api_key: text(&created["api_key"]),
                embed_secret: text(&created["embed_secret"]),
            })),
        ),
        Ok((status, answer)) => {
            let mut page = admin_page(None);
            page.notice = problem(text(&answer["error"]));
            render(status, page)
        }
        Err(response) => response,
    }
}

#[derive(Deserialize)]
struct WorkspaceForm {
    name: String,
    #[serde(default)]
    origins: String,
}

async fn save_workspace(
    State(state): State<ConsoleState>,
    client: Option<Extension<ClientAddr>>,
    headers: HeaderMap,
    Form(form): Form<WorkspaceForm>,
) -> Response {
    let client = client.as_deref();
    let session = match posting(&state, &headers, client).await {
        Ok(session) => session,
        Err(refused) => return refused,
    };
    let body = json!({ "name": form.name, "allowed_origins": lines(&form.origins) });
    match state.call(Method::PATCH, "/v1/workspace", &session.key, Some(body), client).await {
        Ok((StatusCode::OK, _)) => Redirect::to("/console?done=saved").into_response(),
        Ok((status, answer)) => match state.onboarding(&session, client, problem(text(&answer["error"])), None).await {
            Ok(page) => render(status, page),
            Err(response) => response,
        },
        Err(response) => response,
    }
}

#[derive(Deserialize)]
struct ToolServerForm {
    base_url: String,
    secret: String,
}

async fn connect(
    State(state): State<ConsoleState>,
    client: Option<Extension<ClientAddr>>,
    headers: HeaderMap,
    Form(form): Form<ToolServerForm>,
) -> Response {
    tool_server(state, client, headers, form, "/v1/integrations/generic-rest/connect").await
}

async fn check(
    State(state): State<ConsoleState>,
    client: Option<Extension<ClientAddr>>,
    headers: HeaderMap,
    Form(form): Form<ToolServerForm>,
) -> Response {
    tool_server(state, client, headers, form, "/v1/integrations/generic-rest/check").await
}

/// Connects or checks a tool server; the page shows the checker's report.
async fn tool_server(
    state: ConsoleState,
    client: Option<Extension<ClientAddr>>,
    headers: HeaderMap,
    form: ToolServerForm,
    path: &str,
) -> Response {
    let client = client.as_deref();
    let session = match posting(&state, &headers, client).await {
        Ok(session) => session,
        Err(refused) => return refused,
    };
    let body = json!({ "base_url": form.base_url.trim(), "secret": form.secret });
    let (status, answer) = match state.call(Method::POST, path, &session.key, Some(body), client).await {
        Ok(answer) => answer,
        Err(response) => return response,
    };
    let connecting = path.ends_with("/connect");
    let (notice, report) = if status == StatusCode::OK {
        // Connect answers `{…, "report"}`, check the report itself.
        let report: Vec<Rule> = answer.get("report").unwrap_or(&answer)["rules"]
            .as_array()
            .map(|rules| {
                rules
                    .iter()
                    .map(|r| Rule { id: text(&r["id"]), status: text(&r["status"]), detail: text(&r["detail"]) })
                    .collect()
            })
            .unwrap_or_default();
        let said = if connecting { "Connected. The checker's report is below." } else { "Checked." };
        (notice(said), Some(report))
    } else {
        (problem(text(&answer["error"])), None)
    };
    match state.onboarding(&session, client, notice, report).await {
        Ok(mut page) => {
            // The form keeps what was typed (never the secret).
            if let PageBody::Onboarding(onboarding) = &mut page.body {
                onboarding.entered_base_url = Some(form.base_url.trim().to_owned());
                if let (true, Some(server)) = (connecting && status == StatusCode::OK, &mut onboarding.tool_server) {
                    server.listed = strings(&answer["tools"]);
                }
            }
            render(status, page)
        }
        Err(response) => response,
    }
}

#[derive(Deserialize)]
struct ThemeForm {
    #[serde(default)]
    mode: String,
    #[serde(default)]
    accent: String,
    #[serde(default)]
    radius: String,
    #[serde(default)]
    font: String,
}

/// Saves the workspace's default look; an empty field is the default.
async fn save_theme(
    State(state): State<ConsoleState>,
    client: Option<Extension<ClientAddr>>,
    headers: HeaderMap,
    Form(form): Form<ThemeForm>,
) -> Response {
    let client = client.as_deref();
    let session = match posting(&state, &headers, client).await {
        Ok(session) => session,
        Err(refused) => return refused,
    };
    let given = |value: &str| Some(value.trim()).filter(|v| !v.is_empty()).map(str::to_owned);
    let radius = match given(&form.radius).map(|r| r.parse::<u8>()) {
        None => Value::Null,
        Some(Ok(radius)) => json!(radius),
        // Passed on as written: the API names what is wrong with it.
        Some(Err(_)) => json!(form.radius.trim()),
    };
    let mut theme = serde_json::Map::new();
    for (key, value) in [("mode", given(&form.mode)), ("accent", given(&form.accent)), ("font", given(&form.font))] {
        if let Some(value) = value {
            theme.insert(key.to_owned(), json!(value));
        }
    }
    if !radius.is_null() {
        theme.insert("radius".to_owned(), radius);
    }
    let body = json!({ "theme": theme });
    match state.call(Method::PATCH, "/v1/workspace", &session.key, Some(body), client).await {
        Ok((StatusCode::OK, _)) => Redirect::to("/console?done=saved").into_response(),
        Ok((status, answer)) => match state.onboarding(&session, client, problem(text(&answer["error"])), None).await {
            Ok(page) => render(status, page),
            Err(response) => response,
        },
        Err(response) => response,
    }
}

/// What the audit page's form sends (every field optional).
#[derive(Deserialize, Default)]
struct AuditForm {
    #[serde(default)]
    user: String,
    #[serde(default)]
    action: String,
    #[serde(default)]
    tool: String,
    #[serde(default)]
    outcome: String,
    #[serde(default)]
    since: String,
    #[serde(default)]
    until: String,
    #[serde(default)]
    cursor: String,
}

impl AuditForm {
    fn filters(&self) -> AuditFilters {
        AuditFilters {
            user: self.user.trim().to_owned(),
            action: self.action.trim().to_owned(),
            tool: self.tool.trim().to_owned(),
            outcome: self.outcome.trim().to_owned(),
            since: self.since.trim().to_owned(),
            until: self.until.trim().to_owned(),
        }
    }

    /// The API's query for these filters: days become RFC 3339 times (the
    /// "to" day included); or what is wrong with them.
    fn api_query(&self, page: Option<i64>) -> Result<String, String> {
        let f = self.filters();
        let mut query = url::form_urlencoded::Serializer::new(String::new());
        for (key, value) in [("user", &f.user), ("action", &f.action), ("tool", &f.tool), ("outcome", &f.outcome)] {
            if !value.is_empty() {
                query.append_pair(key, value);
            }
        }
        if !f.since.is_empty() {
            query.append_pair("since", &format!("{}T00:00:00Z", day(&f.since, "From")?));
        }
        if !f.until.is_empty() {
            let after = day(&f.until, "To")?.next_day().ok_or("To: the day is out of range")?;
            query.append_pair("until", &format!("{after}T00:00:00Z"));
        }
        if let Some(limit) = page {
            query.append_pair("limit", &limit.to_string());
            if !self.cursor.is_empty() {
                query.append_pair("cursor", &self.cursor);
            }
        }
        Ok(query.finish())
    }
}

/// The form's query string for `filters` (and a cursor).
fn form_query(filters: &AuditFilters, cursor: Option<&str>) -> String {
    let mut query = url::form_urlencoded::Serializer::new(String::new());
    for (key, value) in [
        ("user", &filters.user),
        ("action", &filters.action),
        ("tool", &filters.tool),
        ("outcome", &filters.outcome),
        ("since", &filters.since),
        ("until", &filters.until),
    ] {
        if !value.is_empty() {
            query.append_pair(key, value);
        }
    }
    if let Some(cursor) = cursor {
        query.append_pair("cursor", cursor);
    }
    query.finish()
}

/// A `YYYY-MM-DD` day from a date field.
fn day(value: &str, field: &str) -> Result<time::Date, String> {
    let format = time::macros::format_description!("[year]-[month]-[day]");
    time::Date::parse(value, &format).map_err(|_| format!("{field}: not a day (YYYY-MM-DD)"))
}

/// Entries shown per page.
const AUDIT_PAGE: i64 = 50;
/// Characters of an entry's detail shown in the table.
const DETAIL_CHARS: usize = 300;

/// The audit trail, filtered, a page at a time.
async fn audit(
    State(state): State<ConsoleState>,
    client: Option<Extension<ClientAddr>>,
    headers: HeaderMap,
    Query(form): Query<AuditForm>,
) -> Response {
    let client = client.as_deref();
    let Some(session) = state.session(&headers, client).await else {
        return render(StatusCode::OK, Page { title: "Sign in".into(), ..Page::default() });
    };
    if session.workspace_id.is_none() {
        return Redirect::to("/console").into_response();
    }
    let filters = form.filters();
    let mut page = Page {
        title: "Audit trail".into(),
        signed_in: Some("Your workspace".into()),
        nav: true,
        notice: None,
        body: PageBody::Audit(Audit {
            export: form_query(&filters, None),
            filters: filters.clone(),
            ..Audit::default()
        }),
    };
    let query = match form.api_query(Some(AUDIT_PAGE)) {
        Ok(query) => query,
        Err(why) => {
            page.notice = problem(why);
            return render(StatusCode::BAD_REQUEST, page);
        }
    };
    let (status, answer) =
        match state.call(Method::GET, &format!("/v1/audit?{query}"), &session.key, None, client).await {
            Ok(answer) => answer,
            Err(response) => return response,
        };
    if status != StatusCode::OK {
        page.notice = problem(text(&answer["error"]));
        return render(status, page);
    }
    let entries = answer["items"]
        .as_array()
        .map(|items| {
            items
                .iter()
                .map(|i| AuditEntry {
                    at: text(&i["at"]),
                    actor: text(&i["actor"]),
                    action: text(&i["action"]),
                    user: text(&i["user"]),
                    tool: text(&i["tool"]),
                    outcome: text(&i["outcome"]),
                    detail: i["detail"].to_string().chars().take(DETAIL_CHARS).collect(),
                })
                .collect()
        })
        .unwrap_or_default();
    if let PageBody::Audit(audit) = &mut page.body {
        audit.entries = entries;
        audit.next = answer["next_cursor"].as_str().map(|cursor| form_query(&filters, Some(cursor)));
    }
    render(StatusCode::OK, page)
}

/// The whole trail for the filters, as JSON Lines, downloaded.
async fn export_audit(
    State(state): State<ConsoleState>,
    client: Option<Extension<ClientAddr>>,
    headers: HeaderMap,
    Query(form): Query<AuditForm>,
) -> Response {
    let client = client.as_deref();
    let Some(session) = state.session(&headers, client).await.filter(|s| s.workspace_id.is_some()) else {
        return signed_out(&state, client, "Sign in first.");
    };
    let query = match form.api_query(None) {
        Ok(query) => query,
        Err(why) => {
            return render(
                StatusCode::BAD_REQUEST,
                Page { title: "Audit trail".into(), notice: problem(why), ..Page::default() },
            );
        }
    };
    let answer =
        state.send(Method::GET, &format!("/v1/audit?{query}"), &session.key, None, "application/jsonl", client).await;
    if answer.status() != StatusCode::OK {
        return failure("The export could not be made. Try again.");
    }
    let mut response = Response::new(answer.into_body());
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/jsonl"));
    headers.insert(header::CONTENT_DISPOSITION, HeaderValue::from_static("attachment; filename=\"audit.jsonl\""));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    response
}

/// The secrets-and-data page of the session's workspace.
async fn operations_page(
    state: &ConsoleState,
    session: &Session,
    client: Option<&ClientAddr>,
    notice: Option<Notice>,
) -> Result<Page, Response> {
    let (status, workspace) = state.call(Method::GET, "/v1/workspace", &session.key, None, client).await?;
    if status != StatusCode::OK {
        return Err(signed_out(state, client, "Your session's key no longer works. Sign in again."));
    }
    let until = |key: &str| workspace[key].as_str().map(str::to_owned);
    Ok(Page {
        title: "Secrets and data".into(),
        signed_in: Some(text(&workspace["name"])),
        nav: true,
        notice,
        body: PageBody::Operations(Operations {
            embed_secret_kid: text(&workspace["embed_secret_kid"]),
            previous_embed_secret_until: until("previous_embed_secret_valid_until"),
            previous_api_key_until: until("previous_api_key_valid_until"),
            new_secret: None,
            retention_days: workspace["retention_days"].as_u64(),
            erased: None,
        }),
    })
}

/// A workspace session's page, or the answer instead (signed out, the operator).
async fn workspace_session(
    state: &ConsoleState,
    headers: &HeaderMap,
    client: Option<&ClientAddr>,
    posting_form: bool,
) -> Result<Session, Response> {
    let session = if posting_form {
        posting(state, headers, client).await?
    } else {
        state.session(headers, client).await.ok_or_else(|| signed_out(state, client, "Sign in first."))?
    };
    if session.workspace_id.is_none() {
        return Err(Redirect::to("/console").into_response());
    }
    Ok(session)
}

/// Shows `page`, or the answer that replaced it.
fn shown(status: StatusCode, page: Result<Page, Response>) -> Response {
    match page {
        Ok(page) => render(status, page),
        Err(response) => response,
    }
}

async fn operations(
    State(state): State<ConsoleState>,
    client: Option<Extension<ClientAddr>>,
    headers: HeaderMap,
    Query(done): Query<Done>,
) -> Response {
    let client = client.as_deref();
    let session = match workspace_session(&state, &headers, client, false).await {
        Ok(session) => session,
        Err(response) => return response,
    };
    let said = (done.done.as_deref() == Some("saved")).then(|| Notice { text: "Saved.".into(), error: false });
    shown(StatusCode::OK, operations_page(&state, &session, client, said).await)
}

#[derive(Deserialize)]
struct RotateForm {
    grace_seconds: String,
}

async fn rotate_embed_secret(
    State(state): State<ConsoleState>,
    client: Option<Extension<ClientAddr>>,
    headers: HeaderMap,
    Form(form): Form<RotateForm>,
) -> Response {
    rotate(state, client, headers, form, "/v1/workspace/embed-secret/rotate", "embed_secret", "embed secret").await
}

async fn rotate_api_key(
    State(state): State<ConsoleState>,
    client: Option<Extension<ClientAddr>>,
    headers: HeaderMap,
    Form(form): Form<RotateForm>,
) -> Response {
    rotate(state, client, headers, form, "/v1/workspace/api-key/rotate", "api_key", "api key").await
}

/// Rotates a secret; the new one is shown this once. A new api key also
/// becomes this session's, so the console keeps working after the grace.
async fn rotate(
    state: ConsoleState,
    client: Option<Extension<ClientAddr>>,
    headers: HeaderMap,
    form: RotateForm,
    path: &str,
    field: &str,
    what: &str,
) -> Response {
    let client = client.as_deref();
    let session = match workspace_session(&state, &headers, client, true).await {
        Ok(session) => session,
        Err(response) => return response,
    };
    let grace = match form.grace_seconds.trim().parse::<u64>() {
        Ok(grace) => json!(grace),
        Err(_) => json!(form.grace_seconds.trim()),
    };
    let (status, answer) =
        match state.call(Method::POST, path, &session.key, Some(json!({ "grace_seconds": grace })), client).await {
            Ok(answer) => answer,
            Err(response) => return response,
        };
    if status != StatusCode::OK {
        return shown(status, operations_page(&state, &session, client, problem(text(&answer["error"]))).await);
    }
    let secret = text(&answer[field]);
    let mut session = session;
    if field == "api_key" {
        let stored = db::console::set_key(&state.pool, &session.token_hash, &state.vault.seal(&secret)).await;
        if let Err(e) = stored {
            tracing::error!(error = format!("{e:#}"), "console: cannot keep the new api key in the session");
        }
        session.key = Secret::new(secret.clone());
    }
    let mut page = operations_page(&state, &session, client, notice(format!("A new {what} is made."))).await;
    if let Ok(Page { body: PageBody::Operations(operations), .. }) = &mut page {
        operations.new_secret = Some((what.to_owned(), secret));
    }
    shown(StatusCode::OK, page)
}

#[derive(Deserialize)]
struct RetentionForm {
    #[serde(default)]
    days: String,
}

async fn save_retention(
    State(state): State<ConsoleState>,
    client: Option<Extension<ClientAddr>>,
    headers: HeaderMap,
    Form(form): Form<RetentionForm>,
) -> Response {
    let client = client.as_deref();
    let session = match workspace_session(&state, &headers, client, true).await {
        Ok(session) => session,
        Err(response) => return response,
    };
    let days = match form.days.trim() {
        "" => Value::Null,
        days => days.parse::<u64>().map_or_else(|_| json!(days), |d| json!(d)),
    };
    let body = json!({ "retention_days": days });
    match state.call(Method::PATCH, "/v1/workspace", &session.key, Some(body), client).await {
        Ok((StatusCode::OK, _)) => Redirect::to("/console/operations?done=saved").into_response(),
        Ok((status, answer)) => {
            shown(status, operations_page(&state, &session, client, problem(text(&answer["error"]))).await)
        }
        Err(response) => response,
    }
}

#[derive(Deserialize)]
struct EraseForm {
    user: String,
    #[serde(default)]
    confirm: String,
}

async fn erase_user(
    State(state): State<ConsoleState>,
    client: Option<Extension<ClientAddr>>,
    headers: HeaderMap,
    Form(form): Form<EraseForm>,
) -> Response {
    let client = client.as_deref();
    let session = match workspace_session(&state, &headers, client, true).await {
        Ok(session) => session,
        Err(response) => return response,
    };
    let user = form.user.trim();
    if form.confirm != "yes" || user.is_empty() {
        let why = problem("Name the user and tick the box: an erasure cannot be undone.");
        return shown(StatusCode::BAD_REQUEST, operations_page(&state, &session, client, why).await);
    }
    // One path segment: every reserved byte escaped (a `+` from the form
    // encoding is a space, and a literal `+` is `%2B`).
    let segment = url::form_urlencoded::byte_serialize(user.as_bytes()).collect::<String>().replace('+', "%20");
    let path = format!("/v1/users/{segment}");
    let (status, answer) = match state.call(Method::DELETE, &path, &session.key, None, client).await {
        Ok(answer) => answer,
        Err(response) => return response,
    };
    if status != StatusCode::OK {
        return shown(status, operations_page(&state, &session, client, problem(text(&answer["error"]))).await);
    }
    let counts: Vec<(String, u64)> = answer["deleted"]
        .as_object()
        .map(|d| d.iter().map(|(k, v)| (k.replace('_', " "), v.as_u64().unwrap_or(0))).collect())
        .unwrap_or_default();
    let mut page = operations_page(&state, &session, client, notice("Erased.")).await;
    if let Ok(Page { body: PageBody::Operations(operations), .. }) = &mut page {
        operations.erased = Some((user.to_owned(), counts));
    }
    shown(StatusCode::OK, page)
}

#[derive(Deserialize, Default)]
struct ConversationForm {
    #[serde(default)]
    user: String,
    #[serde(default)]
    since: String,
    #[serde(default)]
    until: String,
    #[serde(default)]
    cursor: String,
}

/// The page of the list for these filters (and a cursor).
fn conversations_query(user: &str, since: &str, until: &str, cursor: Option<&str>) -> String {
    let mut query = url::form_urlencoded::Serializer::new(String::new());
    for (key, value) in [("user", user), ("since", since), ("until", until)] {
        if !value.is_empty() {
            query.append_pair(key, value);
        }
    }
    if let Some(cursor) = cursor {
        query.append_pair("cursor", cursor);
    }
    query.finish()
}

/// Conversations shown per page.
const CONVERSATIONS_PAGE: i64 = 50;

/// The API's path for the list's filters: days become RFC 3339 times (the
/// "to" day included); or what is wrong with them.
fn conversations_api_path(user: &str, since: &str, until: &str, cursor: &str) -> Result<String, String> {
    let mut query = url::form_urlencoded::Serializer::new(String::new());
    query.append_pair("limit", &CONVERSATIONS_PAGE.to_string());
    if !user.is_empty() {
        query.append_pair("user", user);
    }
    if !since.is_empty() {
        query.append_pair("since", &format!("{}T00:00:00Z", day(since, "From")?));
    }
    if !until.is_empty() {
        let after = day(until, "To")?.next_day().ok_or("To: the day is out of range")?;
        query.append_pair("until", &format!("{after}T00:00:00Z"));
    }
    if !cursor.is_empty() {
        query.append_pair("cursor", cursor);
    }
    Ok(format!("/v1/workspace/conversations?{}", query.finish()))
}

/// The workspace's conversations, by user and day of last activity.
async fn conversations(
    State(state): State<ConsoleState>,
    client: Option<Extension<ClientAddr>>,
    headers: HeaderMap,
    Query(form): Query<ConversationForm>,
) -> Response {
    let client = client.as_deref();
    let session = match workspace_session(&state, &headers, client, false).await {
        Ok(session) => session,
        Err(response) => return response,
    };
    let (user, since, until) = (form.user.trim(), form.since.trim(), form.until.trim());
    let mut page = Page {
        title: "Conversations".into(),
        signed_in: Some("Your workspace".into()),
        nav: true,
        notice: None,
        body: PageBody::Conversations(Conversations {
            user: user.to_owned(),
            since: since.to_owned(),
            until: until.to_owned(),
            ..Conversations::default()
        }),
    };
    let path = match conversations_api_path(user, since, until, &form.cursor) {
        Ok(path) => path,
        Err(why) => {
            page.notice = problem(why);
            return render(StatusCode::BAD_REQUEST, page);
        }
    };
    let (status, answer) = match state.call(Method::GET, &path, &session.key, None, client).await {
        Ok(answer) => answer,
        Err(response) => return response,
    };
    if status != StatusCode::OK {
        page.notice = problem(text(&answer["error"]));
        return render(status, page);
    }
    if let PageBody::Conversations(list) = &mut page.body {
        list.items = answer["items"]
            .as_array()
            .map(|items| {
                items
                    .iter()
                    .map(|c| ConversationItem {
                        id: text(&c["id"]),
                        user: text(&c["user"]),
                        title: text(&c["title"]),
                        updated_at: text(&c["updated_at"]),
                    })
                    .collect()
            })
            .unwrap_or_default();
        list.next = answer["next_cursor"].as_str().map(|c| conversations_query(user, since, until, Some(c)));
    }
    render(StatusCode::OK, page)
}

/// One conversation, read-only, as its user saw it.
async fn conversation(
    State(state): State<ConsoleState>,
    client: Option<Extension<ClientAddr>>,
    headers: HeaderMap,
    axum::extract::Path(id): axum::extract::Path<String>,
) -> Response {
    let client = client.as_deref();
    let session = match workspace_session(&state, &headers, client, false).await {
        Ok(session) => session,
        Err(response) => return response,
    };
    let segment = url::form_urlencoded::byte_serialize(id.as_bytes()).collect::<String>().replace('+', "%20");
    let path = format!("/v1/workspace/conversations/{segment}");
    let (status, answer) = match state.call(Method::GET, &path, &session.key, None, client).await {
        Ok(answer) => answer,
        Err(response) => return response,
    };
    if status != StatusCode::OK {
        let page = Page {
            title: "Conversation".into(),
            nav: true,
            notice: problem(text(&answer["error"])),
            ..Page::default()
        };
        return render(status, page);
    }
    let messages = answer["messages"]
        .as_array()
        .map(|messages| {
            messages
                .iter()
                .map(|m| TranscriptMessage {
                    role: text(&m["role"]),
                    text: text(&m["text"]),
                    cards: m["cards"]
                        .as_array()
                        .map(|cards| cards.iter().map(|c| text(&c["title"])).collect())
                        .unwrap_or_default(),
                    at: m["created_at"].as_i64().map(crate::ids::rfc3339).unwrap_or_default(),
                })
                .collect()
        })
        .unwrap_or_default();
    render(
        StatusCode::OK,
        Page {
            title: "Conversation".into(),
            signed_in: Some("Your workspace".into()),
            nav: true,
            notice: None,
            body: PageBody::Transcript(Transcript {
                user: text(&answer["user"]),
                title: text(&answer["title"]),
                updated_at: text(&answer["updated_at"]),
                messages,
            }),
        },
    )
}

/// The live preview: the widget page as the workspace's visitors get it
/// (its default look), chatting as `console-preview`, framed only by the
/// console's own pages.
async fn preview(
    State(state): State<ConsoleState>,
    client: Option<Extension<ClientAddr>>,
    headers: HeaderMap,
    request: Request<Body>,
) -> Response {
    let client = client.as_deref();
    let session = match workspace_session(&state, &headers, client, false).await {
        Ok(session) => session,
        Err(response) => return response,
    };
    let workspace_id = session.workspace_id.unwrap_or_default();
    let workspace = match db::workspace(&state.pool, &workspace_id).await {
        Ok(Some(workspace)) => workspace,
        Ok(None) => return signed_out(&state, client, "This workspace no longer exists."),
        Err(e) => {
            tracing::error!(error = format!("{e:#}"), "console: cannot load the workspace for the preview");
            return failure("The preview could not be made. Try again.");
        }
    };
    let token = match state.vault.open(&workspace.embed_secret_enc) {
        Ok(secret) => crate::auth::mint(&workspace.id, secret.expose(), PREVIEW_USER, &[], PREVIEW_TOKEN_SECS),
        Err(e) => {
            tracing::error!(error = format!("{e:#}"), "console: cannot open the embed secret for the preview");
            return failure("The preview could not be made. Try again.");
        }
    };
    let boot = widget::wire::WidgetBoot {
        workspace_id: workspace.id.clone(),
        allowed_origins: Vec::new(),
        demo_model: state.pages.demo_model,
        title: workspace.name.clone(),
        theme: workspace.theme(),
        token: Some(token),
        caddie: None,
    };
    // No other ancestor: the widget page is framed by our own origin only.
    let mut response = state.pages.render(boot, &[], request).await;
    let headers = response.headers_mut();
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    response
}
