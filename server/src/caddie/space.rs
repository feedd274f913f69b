//! The space (caddie-tool-contract-ct1.md §6): the widget full page under
//! the host bar, the bar's context API, and fresh tokens for the app.

use axum::Json;
use axum::extract::{Path, Query, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::json;
use widget::wire::{CaddieBar, Theme, WidgetBoot};

use super::{DEFAULT_LEVEL, caddie, internal, pages, signed_in, store, to_login, token};
use crate::state::AppState;

#[derive(Deserialize)]
pub(super) struct SpaceQuery {
    cctx: Option<String>,
    tour: Option<String>,
}

/// The space: the widget full page, wearing the host bar. Signed-in users
/// with a grant only.
pub(super) async fn show_space(
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
pub(super) async fn renew_space_token(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(workspace_id): Path<String>,
) -> Response {
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
pub(super) async fn get_context(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(ctx_id): Path<String>,
) -> Response {
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
