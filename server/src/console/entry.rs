//! Coming in and going out: the sign-in page, signing in (limited per
//! client address) and out, and the operator's page that lists the
//! workspaces and creates them.

use ::console::{Admin, Body as PageBody, Created, Notice, Page, WorkspaceItem};
use axum::Extension;
use axum::extract::{Form, Query, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use serde::Deserialize;
use serde_json::json;

use super::shared::{
    ConsoleState, Done, SESSION_SECS, Signed, failure, refused, refused_cross_site, render, signed_out, text,
};
use crate::client_addr::ClientAddr;
use crate::crypto::hash_api_key;
use crate::db;
use crate::limits::Refusal;

/// `/console`: the sign-in page, the operator's page, or the workspace's
/// onboarding.
pub(super) async fn home(
    State(state): State<ConsoleState>,
    client: Option<Extension<ClientAddr>>,
    headers: HeaderMap,
    Query(done): Query<Done>,
) -> Result<Response, Response> {
    let client = client.map(|c| c.0);
    let Some(session) = state.session(&headers, client.as_ref()).await else {
        return Ok(render(StatusCode::OK, Page { title: "Sign in".into(), ..Page::default() }));
    };
    let signed = Signed { state, client, session };
    if signed.session.workspace_id.is_none() {
        return Ok(render(StatusCode::OK, admin_page(&signed, None).await?));
    }
    Ok(render(StatusCode::OK, signed.onboarding(done.notice(), None).await?))
}

/// The operator's page: the workspaces (`GET /v1/workspaces`), and the
/// form that creates one.
async fn admin_page(signed: &Signed, created: Option<Created>) -> Result<Page, Response> {
    let notice = created.as_ref().map(|c| Notice { text: format!("Created “{}”.", c.name), error: false });
    let answer = signed.call(Method::GET, "/v1/workspaces", None).await?;
    let list = |w: &serde_json::Value, key: &str| -> Vec<String> {
        w[key].as_array().map_or(Vec::new(), |a| a.iter().map(text).collect())
    };
    let workspaces = answer.json["items"].as_array().map_or(Vec::new(), |items| {
        items
            .iter()
            .map(|w| WorkspaceItem {
                id: text(&w["id"]),
                name: text(&w["name"]),
                created: text(&w["created_at"]).chars().take(10).collect(),
                allowed_origins: list(w, "allowed_origins"),
                integrations: list(w, "integrations"),
                conversations_this_month: w["conversations_this_month"].as_u64().unwrap_or(0),
            })
            .collect()
    });
    Ok(Page {
        title: "Workspaces".into(),
        signed_in: Some("Operator".into()),
        nav: false,
        notice,
        body: PageBody::Admin(Admin { created, workspaces }),
    })
}

#[derive(Deserialize)]
pub(super) struct SignIn {
    key: String,
}

/// Signs in with a workspace's api key or the operator's admin token.
/// Attempts are counted per client address (every replica's), so keys
/// cannot be guessed through the form at any speed.
pub(super) async fn sign_in(
    State(state): State<ConsoleState>,
    client: Option<Extension<ClientAddr>>,
    headers: HeaderMap,
    Form(form): Form<SignIn>,
) -> Response {
    let client = client.as_deref();
    if !state.is_from_our_pages(&headers) {
        return refused_cross_site();
    }
    let ip = client.map_or(std::net::IpAddr::from([0, 0, 0, 0]), |c| c.ip);
    match state.limits.admit_sign_in(ip).await {
        Ok(Ok(())) => {}
        Ok(Err(Refusal::TooMany { retry_after, .. })) => {
            let mut response = refused(
                StatusCode::TOO_MANY_REQUESTS,
                "Too many sign-in attempts from your address. Wait a minute and try again.",
            );
            let seconds = HeaderValue::from(retry_after.as_secs().max(1));
            response.headers_mut().insert(header::RETRY_AFTER, seconds);
            return response;
        }
        Err(e) => {
            tracing::error!(error = format!("{e:#}"), "console: cannot count a sign-in attempt");
            return failure("The console could not check the key. Try again.");
        }
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

/// Ends the session (its row too) and clears the cookie.
pub(super) async fn sign_out(
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

/// Lines of a textarea, trimmed, without the empty ones.
pub(super) fn lines(text: &str) -> Vec<String> {
    text.lines().map(str::trim).filter(|l| !l.is_empty()).map(str::to_owned).collect()
}

#[derive(Deserialize)]
pub(super) struct NewWorkspace {
    name: String,
    #[serde(default)]
    origins: String,
}

/// The operator creates a workspace; its secrets are shown this once.
pub(super) async fn create_workspace(signed: Signed, Form(form): Form<NewWorkspace>) -> Result<Response, Response> {
    if signed.session.workspace_id.is_some() {
        return Err(refused(StatusCode::FORBIDDEN, "Only the operator creates workspaces."));
    }
    let body = json!({ "name": form.name, "allowed_origins": lines(&form.origins) });
    let answer = signed.call(Method::POST, "/v1/workspaces", Some(body)).await?;
    if !answer.ok() {
        let mut page = admin_page(&signed, None).await?;
        page.notice = answer.problem();
        return Ok(render(answer.status, page));
    }
    let created = answer.json;
    let created = Created {
        id: text(&created["id"]),
        name: created["name"].as_str().unwrap_or(form.name.trim()).to_owned(),
        api_key: text(&created["api_key"]),
        embed_secret: text(&created["embed_secret"]),
    };
    Ok(render(StatusCode::OK, admin_page(&signed, Some(created)).await?))
}
