//! The assistant as a Caddie tool (caddie-tool-contract-ct1.md), the
//! user-visible half: the signed launch hand-off (§3), identity through the
//! IdP and scoped auto-provisioning (§4), the host bar's context (§6) and
//! the failure pages (§8). Mounted only when `CADDIE_TOOL_SECRET` is set;
//! otherwise every Caddie route answers 404.
//!
//! The flow: `GET /launch?lt=` verifies the token, burns its `jti`, stores a
//! launch context and 303s to the token-free `/caddie/open?cctx=`. That
//! page signs the user in (a session cookie of our own, or OIDC with PKCE,
//! silently first), provisions a grant when §4 allows it, and 303s to the
//! space, `/caddie/spaces/{workspace}?cctx=`, which renders the widget full
//! page wearing the host bar.

pub mod hub_api;
pub mod keys;
pub mod oidc;
pub mod pages;
pub mod report;
pub mod signed;
pub mod store;
pub mod token;

use axum::extract::{Path, Query, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::json;
use widget::wire::{CaddieBar, Theme, WidgetBoot};

use crate::config::CaddieConfig;
use crate::ids::{now_ms, now_secs};
use crate::state::AppState;
use keys::Keys;
use oidc::{FlowSecrets, Oidc};

/// The grant level a launch provisions (the contract's default level).
pub const DEFAULT_LEVEL: &str = "client";
/// A local copy of the participants older than this is confirmed with the hub first.
pub const PARTICIPANTS_FRESH_MS: i64 = 15 * 60 * 1000;

const SESSION_COOKIE: &str = "ca_session";
const STATE_COOKIE: &str = "ca_oidc_state";
/// Set at logout: the next sign-in is interactive, never a silent probe.
const OPTOUT_COOKIE: &str = "bw_optout";

/// What the Caddie routes share.
pub struct Caddie {
    pub config: CaddieConfig,
    pub keys: Keys,
    pub oidc: Oidc,
    /// Cookies carry `Secure` when the public URL is https.
    pub secure_cookies: bool,
    /// Asks the hub for an assignment's current participants (§4).
    pub hub: reqwest::Client,
}

impl Caddie {
    pub fn new(config: CaddieConfig, public_base: &str) -> Self {
        let keys = Keys::new(&config.secret, config.secret_prev.as_ref());
        let oidc = Oidc::new(config.oidc.clone(), format!("{public_base}/caddie/auth/callback"));
        let hub = reqwest::Client::builder()
            .timeout(std::time::Duration::from_secs(5))
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .expect("the HTTP client builds");
        Self { config, keys, oidc, secure_cookies: public_base.starts_with("https://"), hub }
    }

    fn cookie(&self, name: &str, value: &str, max_age_secs: i64) -> HeaderValue {
        let secure = if self.secure_cookies { "; Secure" } else { "" };
        HeaderValue::from_str(&format!(
            "{name}={value}; Path=/; HttpOnly; SameSite=Lax; Max-Age={max_age_secs}{secure}"
        ))
        .expect("cookie values are ASCII")
    }
}

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/launch", get(launch))
        .route("/caddie/open", get(open))
        .route("/caddie/login", get(login))
        .route("/caddie/auth/callback", get(callback))
        .route("/caddie/logout", post(logout))
        .route("/caddie/spaces/{workspace_id}", get(space))
        .route("/caddie/api/context/{ctx}", get(context))
        .route("/caddie/api/spaces/{workspace_id}/token", post(space_token))
        .route("/caddie/api/assignments", post(hub_api::provision))
        .route("/caddie/api/assignments/{assignment_id}/status", get(hub_api::status))
        .route("/caddie/api/revoke", post(hub_api::revoke))
}

fn caddie(state: &AppState) -> &Caddie {
    state.caddie.as_deref().expect("the Caddie routes are mounted only when configured")
}

fn internal(error: anyhow::Error) -> Response {
    tracing::error!(error = format!("{error:#}"), "caddie: request failed");
    pages::page(StatusCode::INTERNAL_SERVER_ERROR, "Something went wrong", "<p>Please try again in a moment.</p>")
}

/// A cookie's value from the request.
fn cookie_value(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.to_owned())
}

/// The signed-in user, from our own session cookie.
async fn signed_in(state: &AppState, headers: &HeaderMap) -> anyhow::Result<Option<String>> {
    match cookie_value(headers, SESSION_COOKIE) {
        Some(token) => store::session_user(&state.pool, &token).await,
        None => Ok(None),
    }
}

fn see_other(location: &str) -> Response {
    pages::no_store(Redirect::to(location).into_response())
}

/// To the sign-in, coming back to `next` afterwards.
fn to_login(next: &str) -> Response {
    let q = url::form_urlencoded::Serializer::new(String::new()).append_pair("next", next).finish();
    see_other(&format!("/caddie/login?{q}"))
}

#[derive(Deserialize)]
struct LaunchQuery {
    lt: Option<String>,
    tour: Option<String>,
}

/// `GET /launch?lt=` (§3): verify, then burn the `jti` before any other
/// work, then a launch context, then 303 to a token-free URL. This URL
/// never renders content of its own; the request log carries no query.
async fn launch(State(state): State<AppState>, Query(q): Query<LaunchQuery>) -> Response {
    let caddie = caddie(&state);
    let hub = &caddie.config.hub_origin;
    let Some(lt) = q.lt else { return pages::invalid_link(hub) };
    let claims = match token::verify(&lt, &caddie.keys, &caddie.config.slug, hub, now_secs()) {
        Ok(claims) => claims,
        Err(token::LaunchError::Invalid(why)) => {
            tracing::info!(why, "caddie: launch token refused");
            return pages::invalid_link(hub);
        }
        Err(token::LaunchError::Version) => {
            tracing::warn!("caddie: launch token for another contract version");
            return pages::version_mismatch(hub);
        }
        Err(token::LaunchError::Expired { asg }) => {
            tracing::info!(assignment_id = %asg, "caddie: expired launch token");
            return pages::link_expired(hub, &asg);
        }
    };
    match store::burn_jti(&state.pool, &claims.jti, claims.exp).await {
        Ok(true) => {}
        Ok(false) => {
            tracing::info!(assignment_id = %claims.asg, "caddie: replayed launch token");
            return pages::link_expired(hub, &claims.asg);
        }
        Err(e) => return internal(e),
    }
    let ctx = store::insert_ctx(
        &state.pool,
        store::NewCtx {
            assignment_id: &claims.asg,
            project_slug: &claims.prj,
            project_name: &claims.pnm,
            stage_label: &claims.stg,
            return_url: &claims.ret,
            sub: &claims.sub,
            jti: &claims.jti,
            token_exp: claims.exp,
        },
    )
    .await;
    let ctx = match ctx {
        Ok(ctx) => ctx,
        Err(e) => return internal(e),
    };
    if let Err(e) = store::set_return_url(&state.pool, &claims.asg, &claims.ret).await {
        return internal(e);
    }
    let tour = if q.tour.as_deref() == Some("1") { "&tour=1" } else { "" };
    tracing::info!(assignment_id = %claims.asg, "caddie: launch accepted");
    see_other(&format!("/caddie/open?cctx={ctx}{tour}"))
}

#[derive(Deserialize)]
struct OpenQuery {
    cctx: Option<String>,
    tour: Option<String>,
}

/// Identity, then provisioning (§4), then the space.
async fn open(State(state): State<AppState>, headers: HeaderMap, Query(q): Query<OpenQuery>) -> Response {
    let caddie = caddie(&state);
    let Some(ctx_id) = q.cctx.filter(|c| c.len() == 32 && c.bytes().all(|b| b.is_ascii_hexdigit())) else {
        return pages::invalid_link(&caddie.config.hub_origin);
    };
    let tour = if q.tour.as_deref() == Some("1") { "&tour=1" } else { "" };
    let here = format!("/caddie/open?cctx={ctx_id}{tour}");
    let user = match signed_in(&state, &headers).await {
        Ok(Some(user)) => user,
        Ok(None) => return to_login(&here),
        Err(e) => return internal(e),
    };
    let ctx = match store::ctx(&state.pool, &ctx_id).await {
        Ok(Some(ctx)) => ctx,
        Ok(None) => return pages::invalid_link(&caddie.config.hub_origin),
        Err(e) => return internal(e),
    };
    let link = match store::link_by_assignment(&state.pool, &ctx.assignment_id).await {
        Ok(Some(link)) => link,
        Ok(None) => return pages::not_ready(&ctx.return_url),
        Err(e) => return internal(e),
    };
    let space = format!("/caddie/spaces/{}?cctx={ctx_id}{tour}", link.workspace_id);
    match store::has_grant(&state.pool, &link.workspace_id, &user).await {
        // Someone who holds a grant of their own proceeds as themselves.
        Ok(true) => return see_other(&space),
        Ok(false) => {}
        Err(e) => return internal(e),
    }
    if user != ctx.sub {
        tracing::info!(assignment_id = %ctx.assignment_id, "caddie: link opened by a different user");
        let switch = format!("/caddie/login?switch=1&next={}", urlencode(&here));
        return pages::different_user(&ctx.return_url, &switch);
    }
    // Only the redeem flow provisions: the token itself must still be valid.
    if now_secs() > ctx.token_exp + token::SKEW_SECS {
        return pages::link_expired(&caddie.config.hub_origin, &ctx.assignment_id);
    }
    let participants = match current_participants(&state, caddie, &link).await {
        Ok(p) => p,
        Err(e) => {
            tracing::warn!(error = format!("{e:#}"), "caddie: cannot confirm the participants with the hub");
            return pages::no_access(&ctx.return_url);
        }
    };
    if !participants.contains(&user) {
        tracing::info!(assignment_id = %ctx.assignment_id, "caddie: launch by a non-participant; nothing provisioned");
        return pages::no_access(&ctx.return_url);
    }
    let granted =
        store::grant_from_launch(&state.pool, &link.workspace_id, &user, DEFAULT_LEVEL, &ctx.assignment_id).await;
    match granted {
        Ok(true) => {
            let detail = json!({ "jti": ctx.jti, "assignment_id": ctx.assignment_id, "level": DEFAULT_LEVEL });
            if let Err(e) =
                store::audit(&state.pool, "caddie-launch", "grant", Some(&link.workspace_id), Some(&user), &detail)
                    .await
            {
                return internal(e);
            }
            tracing::info!(assignment_id = %ctx.assignment_id, "caddie: launch-provisioned grant");
        }
        Ok(false) => {}
        Err(e) => return internal(e),
    }
    see_other(&space)
}

/// The assignment's participants, confirmed with the hub when the local
/// copy is older than 15 minutes (a signed `GET /api/tool/assignments/{asg}`).
async fn current_participants(state: &AppState, caddie: &Caddie, link: &store::LinkRow) -> anyhow::Result<Vec<String>> {
    if now_ms() - link.participants_at <= PARTICIPANTS_FRESH_MS {
        return Ok(link.participants());
    }
    let path = format!("/api/tool/assignments/{}", link.assignment_id);
    let url = caddie.config.hub_origin.join(&path)?;
    let mut request = caddie.hub.get(url);
    for (name, value) in crate::caddie::signed_headers(caddie, b"") {
        request = request.header(name, value);
    }
    let answer = request.send().await?.error_for_status()?;
    #[derive(Deserialize)]
    struct Assignment {
        participants: Vec<String>,
    }
    let assignment: Assignment = answer.json().await?;
    store::set_participants(&state.pool, &link.assignment_id, &assignment.participants).await?;
    Ok(assignment.participants)
}

/// The headers of a tool→caddie call (§5), signed with the tool→caddie key
/// over `ts + "\n" + nonce + "\n" + body`.
pub fn signed_headers(caddie: &Caddie, body: &[u8]) -> Vec<(&'static str, String)> {
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
    let mut b = crate::ids::random_bytes::<16>();
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h = hex::encode(b);
    format!("{}-{}-{}-{}-{}", &h[0..8], &h[8..12], &h[12..16], &h[16..20], &h[20..32])
}

fn urlencode(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

/// Only our own Caddie pages may be a sign-in's destination.
fn safe_next(next: &str) -> Option<&str> {
    let ok = next.starts_with("/caddie/")
        && !next.starts_with("//")
        && !next.contains('\\')
        && !next.chars().any(char::is_control)
        && next.len() <= 512;
    ok.then_some(next)
}

#[derive(Deserialize)]
struct LoginQuery {
    next: Option<String>,
    interactive: Option<String>,
    /// `1`: the user asked to switch accounts — the IdP must ask who they are.
    switch: Option<String>,
}

/// Starts a sign-in: silent (`prompt=none`) unless asked otherwise or the
/// user opted out of the silent probe by logging out.
async fn login(State(state): State<AppState>, headers: HeaderMap, Query(q): Query<LoginQuery>) -> Response {
    let caddie = caddie(&state);
    let Some(next) = q.next.as_deref().and_then(safe_next) else {
        return pages::invalid_link(&caddie.config.hub_origin);
    };
    let opted_out = cookie_value(&headers, OPTOUT_COOKIE).as_deref() == Some("1");
    let prompt = if q.switch.as_deref() == Some("1") {
        Prompt::Login
    } else if q.interactive.as_deref() == Some("1") || opted_out {
        Prompt::Interactive
    } else {
        Prompt::Silent
    };
    start_sign_in(&state, caddie, next, prompt).await
}

/// How the IdP is asked.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Prompt {
    /// `prompt=none`: a session at the IdP signs the user in without a screen.
    Silent,
    Interactive,
    /// `prompt=login`: always ask, even with a session (switching accounts).
    Login,
}

async fn start_sign_in(state: &AppState, caddie: &Caddie, next: &str, prompt: Prompt) -> Response {
    let interactive = prompt != Prompt::Silent;
    let flow = FlowSecrets::new();
    if let Err(e) = store::insert_flow(&state.pool, &flow.state, &flow.verifier, &flow.nonce, next, interactive).await {
        return internal(e);
    }
    let prompt = match prompt {
        Prompt::Silent => Some("none"),
        Prompt::Interactive => None,
        Prompt::Login => Some("login"),
    };
    let url = match caddie.oidc.authorize_url(&flow, prompt).await {
        Ok(url) => url,
        Err(e) => {
            tracing::warn!(error = format!("{e:#}"), "caddie: the identity provider cannot be reached");
            return pages::sign_in_failed(&format!("/caddie/login?interactive=1&next={}", urlencode(next)));
        }
    };
    let mut response = see_other(url.as_str());
    // Binds the flow to this browser: a callback from another one is refused.
    response.headers_mut().append(header::SET_COOKIE, caddie.cookie(STATE_COOKIE, &flow.state, 600));
    response
}

#[derive(Deserialize)]
struct CallbackQuery {
    state: Option<String>,
    code: Option<String>,
    error: Option<String>,
}

/// The provider's answer: a code, or `login_required` and friends after a
/// silent probe (then the interactive login, as a top-level page).
async fn callback(State(state): State<AppState>, headers: HeaderMap, Query(q): Query<CallbackQuery>) -> Response {
    let caddie = caddie(&state);
    let Some(flow_state) = q.state.filter(|s| s.len() <= 128) else {
        return pages::invalid_link(&caddie.config.hub_origin);
    };
    let same_browser = cookie_value(&headers, STATE_COOKIE).is_some_and(|c| c == flow_state);
    let flow = match store::take_flow(&state.pool, &flow_state).await {
        Ok(Some(flow)) if same_browser => flow,
        Ok(_) => {
            tracing::info!("caddie: sign-in callback without a matching flow");
            return pages::sign_in_failed("/caddie/login?interactive=1&next=/caddie/");
        }
        Err(e) => return internal(e),
    };
    let retry = format!("/caddie/login?interactive=1&next={}", urlencode(&flow.next_path));
    if let Some(error) = q.error {
        let needs_interaction = matches!(
            error.as_str(),
            "login_required" | "interaction_required" | "consent_required" | "account_selection_required"
        );
        if needs_interaction && flow.interactive == 0 {
            return start_sign_in(&state, caddie, &flow.next_path, Prompt::Interactive).await;
        }
        tracing::info!(error = %error.chars().take(64).collect::<String>(), "caddie: the provider refused the sign-in");
        return pages::sign_in_failed(&retry);
    }
    let Some(code) = q.code.filter(|c| !c.is_empty() && c.len() <= 2048) else {
        return pages::sign_in_failed(&retry);
    };
    let username = match caddie.oidc.sign_in(&code, &flow.verifier, &flow.nonce).await {
        Ok(username) => username,
        Err(e) => {
            tracing::warn!(error = format!("{e:#}"), "caddie: sign-in failed");
            return pages::sign_in_failed(&retry);
        }
    };
    let token = match store::create_session(&state.pool, &username).await {
        Ok(token) => token,
        Err(e) => return internal(e),
    };
    tracing::info!("caddie: signed in");
    let mut response = see_other(&flow.next_path);
    let headers = response.headers_mut();
    headers.append(header::SET_COOKIE, caddie.cookie(SESSION_COOKIE, &token, store::SESSION_TTL_MS / 1000));
    headers.append(header::SET_COOKIE, caddie.cookie(STATE_COOKIE, "", 0));
    headers.append(header::SET_COOKIE, caddie.cookie(OPTOUT_COOKIE, "", 0));
    response
}

/// Ends the session and sets the opt-out cookie, so the next sign-in is an
/// explicit one; `next` (a sign-in URL of ours) switches accounts.
async fn logout(State(state): State<AppState>, headers: HeaderMap, body: axum::body::Bytes) -> Response {
    let caddie = caddie(&state);
    if let Some(token) = cookie_value(&headers, SESSION_COOKIE)
        && let Err(e) = store::delete_session(&state.pool, &token).await
    {
        return internal(e);
    }
    let next = url::form_urlencoded::parse(&body)
        .find(|(k, _)| k == "next")
        .map(|(_, v)| v.into_owned())
        .filter(|n| n.starts_with("/caddie/login?switch=1&") && safe_next(n).is_some());
    let mut response = match next {
        Some(next) => see_other(&next),
        None => pages::signed_out(&caddie.config.hub_origin),
    };
    let headers = response.headers_mut();
    headers.append(header::SET_COOKIE, caddie.cookie(SESSION_COOKIE, "", 0));
    headers.append(header::SET_COOKIE, caddie.cookie(OPTOUT_COOKIE, "1", 365 * 24 * 3600));
    response
}

#[derive(Deserialize)]
struct SpaceQuery {
    cctx: Option<String>,
    tour: Option<String>,
}

/// The space: the widget full page, wearing the host bar. Signed-in users
/// with a grant only.
async fn space(
    State(state): State<AppState>,
    Path(workspace_id): Path<String>,
    Query(q): Query<SpaceQuery>,
    request: Request,
) -> Response {
    let caddie = caddie(&state);
    let hub = caddie.config.hub_origin.as_str().to_owned();
    if !token::is_id(&workspace_id, 64) {
        return pages::not_ready(&hub);
    }
    let headers = request.headers().clone();
    let user = match signed_in(&state, &headers).await {
        Ok(Some(user)) => user,
        Ok(None) => {
            let here =
                request.uri().path_and_query().map_or_else(|| request.uri().path().to_owned(), |p| p.to_string());
            return to_login(&here);
        }
        Err(e) => return internal(e),
    };
    let (link, workspace) = match (
        store::link_by_workspace(&state.pool, &workspace_id).await,
        crate::db::workspace(&state.pool, &workspace_id).await,
    ) {
        (Ok(Some(link)), Ok(Some(workspace))) => (link, workspace),
        (Ok(_), Ok(_)) => return pages::not_ready(&hub),
        (Err(e), _) | (_, Err(e)) => return internal(e),
    };
    let back = link.return_url.clone().unwrap_or_else(|| hub.clone());
    match store::has_grant(&state.pool, &workspace_id, &user).await {
        Ok(true) => {}
        Ok(false) => return pages::no_access(&back),
        Err(e) => return internal(e),
    }
    // The bar: the launch's context while it lives, else the link (§6).
    let ctx = match q.cctx.as_deref() {
        Some(id) => store::ctx(&state.pool, id).await.ok().flatten().filter(|c| c.assignment_id == link.assignment_id),
        None => None,
    };
    let bar = match ctx {
        Some(c) => CaddieBar {
            project_name: c.project_name,
            stage_label: c.stage_label,
            return_url: c.return_url,
            tour: q.tour.as_deref() == Some("1"),
        },
        None => CaddieBar {
            project_name: link.project_name.clone(),
            stage_label: String::new(),
            return_url: back,
            tour: q.tour.as_deref() == Some("1"),
        },
    };
    let token = match mint_space_token(&state, &workspace, &user) {
        Ok(token) => token,
        Err(e) => return internal(e),
    };
    let boot = WidgetBoot {
        workspace_id: workspace.id.clone(),
        allowed_origins: Vec::new(),
        demo_model: state.engine.model.is_demo,
        title: workspace.name.clone(),
        theme: Theme::default(),
        token: Some(token),
        caddie: Some(bar),
    };
    let mut response = crate::embed::render_widget(&state, boot, &[], request).await;
    response.headers_mut().insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    response
}

fn mint_space_token(state: &AppState, workspace: &crate::db::WorkspaceRow, user: &str) -> anyhow::Result<String> {
    let secret = state.vault.open(&workspace.embed_secret_enc)?;
    let permissions = vec![format!("caddie:{DEFAULT_LEVEL}")];
    Ok(crate::auth::mint(&workspace.id, secret.expose(), user, &permissions, 3600))
}

/// A fresh embed token for the full-page app, when the one it has expires.
async fn space_token(State(state): State<AppState>, headers: HeaderMap, Path(workspace_id): Path<String>) -> Response {
    let user = match signed_in(&state, &headers).await {
        Ok(Some(user)) => user,
        Ok(None) => return api_error(StatusCode::UNAUTHORIZED, "unauthorized", "sign in again"),
        Err(e) => return internal(e),
    };
    let workspace = match crate::db::workspace(&state.pool, &workspace_id).await {
        Ok(Some(w)) => w,
        Ok(None) => return api_error(StatusCode::NOT_FOUND, "not_found", "not found"),
        Err(e) => return internal(e),
    };
    match store::has_grant(&state.pool, &workspace.id, &user).await {
        Ok(true) => {}
        Ok(false) => return api_error(StatusCode::NOT_FOUND, "not_found", "not found"),
        Err(e) => return internal(e),
    }
    match mint_space_token(&state, &workspace, &user) {
        Ok(token) => pages::no_store(Json(json!({ "token": token })).into_response()),
        Err(e) => internal(e),
    }
}

fn api_error(status: StatusCode, code: &str, message: &str) -> Response {
    pages::no_store((status, Json(json!({ "error": message, "code": code }))).into_response())
}

/// `GET /caddie/api/context/{ctx}` (§6): for a signed-in user who may use
/// the linked space (or is the link's user), exactly
/// `{project_name, stage_label, return_url}`.
async fn context(State(state): State<AppState>, headers: HeaderMap, Path(ctx_id): Path<String>) -> Response {
    let user = match signed_in(&state, &headers).await {
        Ok(Some(user)) => user,
        Ok(None) => return api_error(StatusCode::UNAUTHORIZED, "unauthorized", "sign in first"),
        Err(e) => return internal(e),
    };
    let ctx = match store::ctx(&state.pool, &ctx_id).await {
        Ok(Some(ctx)) => ctx,
        Ok(None) => return api_error(StatusCode::NOT_FOUND, "not_found", "no such context, or it expired"),
        Err(e) => return internal(e),
    };
    let allowed = match store::link_by_assignment(&state.pool, &ctx.assignment_id).await {
        Ok(Some(link)) => {
            ctx.sub == user || store::has_grant(&state.pool, &link.workspace_id, &user).await.unwrap_or(false)
        }
        Ok(None) => ctx.sub == user,
        Err(e) => return internal(e),
    };
    if !allowed {
        return api_error(StatusCode::NOT_FOUND, "not_found", "no such context, or it expired");
    }
    pages::no_store(
        Json(json!({ "project_name": ctx.project_name, "stage_label": ctx.stage_label, "return_url": ctx.return_url }))
            .into_response(),
    )
}

/// Provisioning (§2), idempotent on `assignment_id`: the first call makes
/// the assistant space (a workspace of its own) and its link; later calls
/// refresh the participants and return the same space. The space's data is
/// the assistant's own and survives the hub forgetting it.
pub async fn provision(
    state: &AppState,
    assignment_id: &str,
    project_id: &str,
    project_name: &str,
    config: &serde_json::Value,
    participants: &[String],
    stages: &serde_json::Value,
) -> anyhow::Result<String> {
    if let Some(link) = store::link_by_assignment(&state.pool, assignment_id).await? {
        store::apply_participants(&state.pool, &link, participants).await?;
        store::set_stages(&state.pool, assignment_id, stages).await?;
        return Ok(link.workspace_id);
    }
    let name: String = project_name.chars().take(200).collect();
    let workspace = crate::api::setup::new_workspace(state, &name, &[]).await?;
    store::insert_link(
        &state.pool,
        store::NewLink {
            assignment_id,
            workspace_id: &workspace.id,
            project_id,
            project_name: &name,
            config,
            participants,
            stages,
        },
    )
    .await?;
    tracing::info!(assignment_id, workspace_id = %workspace.id, "caddie: space provisioned");
    Ok(workspace.id)
}
