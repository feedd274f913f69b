//! The space (caddie-tool-contract-ct1.md §6): the widget full page under
//! the host bar, the bar's context API, and fresh tokens for the app.

use axum::Json;
use axum::extract::{Path, Query, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::json;
use widget::wire::{CaddieBar, Theme, WidgetBoot};

use super::error::CaddieError;
use super::pages::{self, Surface};
use super::state::{CaddieState, DEFAULT_LEVEL, signed_in, to_login};
use super::token;
use crate::db::caddie as store;
use crate::db::{self, WorkspaceRow};

#[derive(Deserialize)]
pub(super) struct SpaceQuery {
    cctx: Option<String>,
    tour: Option<String>,
    /// `1`: inside the hub's frame (embed mode, §9): no host bar, framed by the hub.
    embed: Option<String>,
}

/// The space: the widget full page, wearing the host bar. Signed-in users
/// with a grant only.
pub(super) async fn show_space(
    State(state): State<CaddieState>,
    Path(workspace_id): Path<String>,
    Query(q): Query<SpaceQuery>,
    request: Request,
) -> Result<Response, CaddieError> {
    let hub_url = &state.caddie.config.hub_origin;
    let hub = hub_url.as_str().to_owned();
    let embed = q.embed.as_deref() == Some("1");
    let surface = if embed { Surface::Embed(hub_url) } else { Surface::Page(hub_url) };
    if !token::is_id(&workspace_id, 64) {
        return Ok(surface.not_ready(&hub));
    }
    let client = request.extensions().get::<crate::client_addr::ClientAddr>();
    let Some(user) = signed_in(&state, request.headers(), client).await? else {
        let here = request.uri().path_and_query().map_or_else(|| request.uri().path().to_owned(), |p| p.to_string());
        return Ok(to_login(&here));
    };
    let link = store::link_by_workspace(&state.pool, &workspace_id).await?;
    let workspace = db::workspace(&state.pool, &workspace_id).await?;
    let (Some(link), Some(workspace)) = (link, workspace) else { return Ok(surface.not_ready(&hub)) };
    let back = link.return_url.clone().unwrap_or_else(|| hub.clone());
    if !store::has_grant(&state.pool, &workspace_id, &user).await? {
        return Ok(surface.no_access(&back));
    }
    // The bar: the launch's context while it lives, else the link (§6).
    let ctx = match q.cctx.as_deref() {
        Some(id) => store::ctx(&state.pool, id).await.ok().flatten().filter(|c| c.assignment_id == link.assignment_id),
        None => None,
    };
    let tour = q.tour.as_deref() == Some("1");
    let hub_origin = hub_url.origin().ascii_serialization();
    let embed_hub = embed.then(|| hub_origin.clone());
    let (project_name, stage_label, return_url) = match ctx {
        Some(c) => (c.project_name, c.stage_label, c.return_url),
        None => (link.project_name.clone(), String::new(), back),
    };
    let bar = CaddieBar { project_name, stage_label, return_url, tour, embed_hub };
    let boot = WidgetBoot {
        workspace_id: workspace.id.clone(),
        allowed_origins: Vec::new(),
        demo_model: state.pages.demo_model,
        title: workspace.name.clone(),
        theme: Theme::default(),
        token: Some(mint_space_token(&state, &workspace, &user)?),
        renew_path: Some(format!("/caddie/api/spaces/{}/token", workspace.id)),
        caddie: Some(bar),
        accept: crate::attachments::accept(workspace.attachment_types().as_deref()),
        ..WidgetBoot::default()
    };
    // Framed by the hub only in embed mode; otherwise by nobody else.
    let ancestors = if embed { vec![hub_origin] } else { Vec::new() };
    let mut response = state.pages.render(boot, &workspace.welcome(), &ancestors, request).await;
    response.headers_mut().insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    Ok(response)
}

fn mint_space_token(state: &CaddieState, workspace: &WorkspaceRow, user: &str) -> anyhow::Result<String> {
    let secret = state.vault.open(&workspace.embed_secret_enc)?;
    let permissions = vec![format!("caddie:{DEFAULT_LEVEL}")];
    Ok(crate::auth::mint(&workspace.id, secret.expose(), user, &permissions, SPACE_TOKEN_SECS))
}

/// A space's embed tokens live five minutes; the full page renews them
/// through the session (`POST /caddie/api/spaces/{workspace}/token`),
/// which checks the grant again.
pub const SPACE_TOKEN_SECS: i64 = 300;

/// A fresh embed token for the full-page app, when the one it has expires.
pub(super) async fn renew_space_token(
    State(state): State<CaddieState>,
    client: Option<axum::Extension<crate::client_addr::ClientAddr>>,
    headers: HeaderMap,
    Path(workspace_id): Path<String>,
) -> Result<Response, CaddieError> {
    let Some(user) = signed_in(&state, &headers, client.as_deref()).await? else {
        return Err(api_error(StatusCode::UNAUTHORIZED, "unauthorized", "sign in again"));
    };
    let not_found = || api_error(StatusCode::NOT_FOUND, "not_found", "not found");
    let workspace = db::workspace(&state.pool, &workspace_id).await?.ok_or_else(not_found)?;
    if !store::has_grant(&state.pool, &workspace.id, &user).await? {
        return Err(not_found());
    }
    let token = mint_space_token(&state, &workspace, &user)?;
    Ok(pages::no_store(Json(json!({ "token": token })).into_response()))
}

fn api_error(status: StatusCode, code: &str, message: &str) -> CaddieError {
    CaddieError::Answer(pages::no_store((status, Json(json!({ "error": message, "code": code }))).into_response()))
}

/// `GET /caddie/api/context/{ctx}` (§6): for a signed-in user who may use
/// the linked space (or is the link's user), exactly
/// `{project_name, stage_label, return_url}`.
pub(super) async fn get_context(
    State(state): State<CaddieState>,
    client: Option<axum::Extension<crate::client_addr::ClientAddr>>,
    headers: HeaderMap,
    Path(ctx_id): Path<String>,
) -> Result<Response, CaddieError> {
    let Some(user) = signed_in(&state, &headers, client.as_deref()).await? else {
        return Err(api_error(StatusCode::UNAUTHORIZED, "unauthorized", "sign in first"));
    };
    let gone = || api_error(StatusCode::NOT_FOUND, "not_found", "no such context, or it expired");
    let ctx = store::ctx(&state.pool, &ctx_id).await?.ok_or_else(gone)?;
    let allowed = ctx.sub == user
        || match store::link_by_assignment(&state.pool, &ctx.assignment_id).await? {
            Some(link) => store::has_grant(&state.pool, &link.workspace_id, &user).await?,
            None => false,
        };
    if !allowed {
        return Err(gone());
    }
    Ok(pages::no_store(
        Json(json!({ "project_name": ctx.project_name, "stage_label": ctx.stage_label, "return_url": ctx.return_url }))
            .into_response(),
    ))
}
