//! Signing in (caddie-tool-contract-ct1.md §4): our own session cookie,
//! else OpenID Connect with PKCE — silently first (`prompt=none`), then
//! interactively on `login_required`; logging out sets an opt-out cookie so
//! the next sign-in is an explicit one.

use axum::Extension;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::Response;
use serde::Deserialize;

use super::embed::is_embed_path;
use super::error::CaddieError;
use super::oidc::FlowSecrets;
use super::pages::{self, Surface};
use super::state::{
    Caddie, CaddieState, OPTOUT_COOKIE, cookie_value, safe_next, see_other, session_cookie, state_cookie, urlencode,
};
use crate::client_addr::ClientAddr;
use crate::db::caddie as store;

#[derive(Deserialize)]
pub(super) struct LoginQuery {
    next: Option<String>,
    interactive: Option<String>,
    /// `1`: the user asked to switch accounts — the IdP must ask who they are.
    switch: Option<String>,
}

/// Starts a sign-in: silent (`prompt=none`) unless asked otherwise or the
/// user opted out of the silent probe by logging out.
pub(super) async fn start_login(
    State(state): State<CaddieState>,
    client: Option<Extension<ClientAddr>>,
    headers: HeaderMap,
    Query(q): Query<LoginQuery>,
) -> Result<Response, CaddieError> {
    let caddie = &state.caddie;
    let secure = caddie.secure_for(client.as_deref());
    let Some(next) = q.next.as_deref().and_then(safe_next) else {
        return Ok(pages::invalid_link(&caddie.config.hub_origin));
    };
    let opted_out = cookie_value(&headers, OPTOUT_COOKIE).as_deref() == Some("1");
    let prompt = if q.switch.as_deref() == Some("1") {
        Prompt::Login
    } else if q.interactive.as_deref() == Some("1") || opted_out {
        Prompt::Interactive
    } else {
        Prompt::Silent
    };
    // Inside the hub's frame only the silent probe runs; a password is
    // typed in a popup, never in a frame (§9).
    if prompt != Prompt::Silent && is_embed_path(next) {
        return Ok(pages::sign_in_card(&caddie.config.hub_origin, StatusCode::OK, "Sign in to continue", next));
    }
    start_sign_in(&state, caddie, next, prompt, secure).await
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

async fn start_sign_in(
    state: &CaddieState,
    caddie: &Caddie,
    next: &str,
    prompt: Prompt,
    secure: bool,
) -> Result<Response, CaddieError> {
    let interactive = prompt != Prompt::Silent;
    let flow = FlowSecrets::new();
    store::insert_flow(&state.pool, &flow.state, &flow.verifier, &flow.nonce, next, interactive).await?;
    let prompt = match prompt {
        Prompt::Silent => Some("none"),
        Prompt::Interactive => None,
        Prompt::Login => Some("login"),
    };
    let url = match caddie.oidc.authorize_url(&flow, prompt).await {
        Ok(url) => url,
        Err(e) => {
            tracing::warn!(error = format!("{e:#}"), "caddie: the identity provider cannot be reached");
            let retry = format!("/caddie/login?interactive=1&next={}", urlencode(next));
            return Ok(surface(caddie, next).sign_in_failed(&retry, next));
        }
    };
    let mut response = see_other(url.as_str());
    // Binds the flow to this browser: a callback from another one is refused.
    response.headers_mut().append(header::SET_COOKIE, caddie.cookie(state_cookie(secure), &flow.state, 600, secure));
    Ok(response)
}

#[derive(Deserialize)]
pub(super) struct CallbackQuery {
    state: Option<String>,
    code: Option<String>,
    error: Option<String>,
    /// RFC 9207: who answered.
    iss: Option<String>,
}

/// The provider's answer: a code, or `login_required` and friends after a
/// silent probe (then the interactive login, as a top-level page).
pub(super) async fn finish_login(
    State(state): State<CaddieState>,
    client: Option<Extension<ClientAddr>>,
    headers: HeaderMap,
    Query(q): Query<CallbackQuery>,
) -> Result<Response, CaddieError> {
    let caddie = &state.caddie;
    let secure = caddie.secure_for(client.as_deref());
    let Some(flow_state) = q.state.filter(|s| s.len() <= 128) else {
        return Ok(pages::invalid_link(&caddie.config.hub_origin));
    };
    let same_browser = cookie_value(&headers, state_cookie(secure)).is_some_and(|c| c == flow_state);
    let flow = match store::take_flow(&state.pool, &flow_state).await? {
        Some(flow) if same_browser => flow,
        _ => {
            tracing::info!("caddie: sign-in callback without a matching flow");
            return Ok(pages::sign_in_failed("/caddie/login?interactive=1&next=/caddie/"));
        }
    };
    let retry = format!("/caddie/login?interactive=1&next={}", urlencode(&flow.next_path));
    let next = flow.next_path.as_str();
    let failed = || surface(caddie, next).sign_in_failed(&retry, next);
    if let Err(e) = caddie.oidc.check_answer_issuer(q.iss.as_deref()).await {
        tracing::warn!(error = format!("{e:#}"), "caddie: sign-in answer from the wrong issuer");
        return Ok(failed());
    }
    if let Some(error) = q.error {
        let needs_interaction = matches!(
            error.as_str(),
            "login_required" | "interaction_required" | "consent_required" | "account_selection_required"
        );
        if needs_interaction && flow.interactive == 0 {
            if is_embed_path(next) {
                let hub = &caddie.config.hub_origin;
                return Ok(pages::sign_in_card(hub, StatusCode::OK, "Sign in to continue", next));
            }
            return start_sign_in(&state, caddie, next, Prompt::Interactive, secure).await;
        }
        tracing::info!(error = %error.chars().take(64).collect::<String>(), "caddie: the provider refused the sign-in");
        return Ok(failed());
    }
    let Some(code) = q.code.filter(|c| !c.is_empty() && c.len() <= 2048) else {
        return Ok(failed());
    };
    let who = match caddie.oidc.sign_in(&code, &flow.verifier, &flow.nonce).await {
        Ok(who) => who,
        Err(e) => {
            tracing::warn!(error = format!("{e:#}"), "caddie: sign-in failed");
            return Ok(failed());
        }
    };
    // A username belongs to the subject that first signed in with it.
    if !store::bind_identity(&state.pool, &who.username, &who.issuer, &who.sub).await? {
        tracing::warn!("caddie: sign-in refused: the username belongs to another subject of the provider");
        return Ok(failed());
    }
    let username = who.username;
    let token = store::create_session(&state.pool, &username).await?;
    tracing::info!("caddie: signed in");
    let mut response = see_other(next);
    let headers = response.headers_mut();
    headers.append(
        header::SET_COOKIE,
        caddie.cookie(session_cookie(secure), &token, store::SESSION_TTL_MS / 1000, secure),
    );
    headers.append(header::SET_COOKIE, caddie.cookie(state_cookie(secure), "", 0, secure));
    headers.append(header::SET_COOKIE, caddie.cookie(OPTOUT_COOKIE, "", 0, secure));
    Ok(response)
}

/// Ends the session and sets the opt-out cookie, so the next sign-in is an
/// explicit one; `next` (a sign-in URL of ours) switches accounts.
pub(super) async fn log_out(
    State(state): State<CaddieState>,
    client: Option<Extension<ClientAddr>>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Result<Response, CaddieError> {
    let caddie = &state.caddie;
    let secure = caddie.secure_for(client.as_deref());
    // Another site's form must not sign our users out (or in as someone else).
    if !caddie.is_from_our_pages(&headers) {
        tracing::info!("caddie: a logout from another site refused");
        return Ok(pages::forbidden_request());
    }
    if let Some(token) = cookie_value(&headers, session_cookie(secure)) {
        store::delete_session(&state.pool, &token).await?;
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
    headers.append(header::SET_COOKIE, caddie.cookie(session_cookie(secure), "", 0, secure));
    headers.append(header::SET_COOKIE, caddie.cookie(OPTOUT_COOKIE, "1", 365 * 24 * 3600, secure));
    // What the widget kept in this browser for the user (the messages not
    // yet sent, the conversation and its copy for reading offline) goes
    // with the session: a shared device keeps no one's conversation.
    headers.insert(CLEAR_SITE_DATA, header::HeaderValue::from_static("\"storage\""));
    Ok(response)
}

const CLEAR_SITE_DATA: header::HeaderName = header::HeaderName::from_static("clear-site-data");

/// Where the pages of a sign-in heading for `next` are shown.
fn surface<'a>(caddie: &'a Caddie, next: &str) -> Surface<'a> {
    let hub = &caddie.config.hub_origin;
    if is_embed_path(next) { Surface::Embed(hub) } else { Surface::Page(hub) }
}
