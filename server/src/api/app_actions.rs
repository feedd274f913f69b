//! Changes an MCP App asks for (our extension; docs/api-extensions.md).
//! An app's `tools/call` of a tool that is not a `get` is frozen as a
//! pending action of that app (api/apps.rs, `propose`) and answered with it; the
//! bridge page shows it in the assistant's chrome around the app — never
//! inside the app's frame — and the visitor's Apply runs it exactly once
//! (a delete is confirmed first), with no model step: the result goes back
//! to the app's request. The audit trail records it as the app's.
//!
//! Like the chat's actions (api/actions.rs), every move is one conditional
//! UPDATE, an action runs only while its server lists the tool as it was,
//! and these routes take the app token: only the app's own bridge, for
//! its own visitor, reaches them; the embed token's `/v1/actions` never
//! sees an app's action.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use serde::Serialize;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use widget::wire::{ActionStatus, PendingAction};

use super::actions::{confirm_once, ensure_bound, refusal};
use super::apps::{AppAnswer, app_caller};
use super::state::ApiState;
use crate::auth::Caller;
use crate::db::actions::{self, ActionRow};
use crate::engine::pending_action;
use crate::http::ApiError;

pub fn router() -> OpenApiRouter<ApiState> {
    OpenApiRouter::new()
        .routes(routes!(confirm_app_action))
        .routes(routes!(apply_app_action))
        .routes(routes!(cancel_app_action))
}

/// An app's action as it stands after `confirm` or `cancel`.
#[derive(Serialize, utoipa::ToSchema)]
struct AppActionState {
    action: PendingAction,
}

/// The app token's caller and its app's action `action_id`, or `404`
/// (another app's, the model's, or none).
async fn app_action(
    state: &ApiState,
    headers: &HeaderMap,
    id: &str,
    action_id: &str,
) -> Result<(Caller, ActionRow), ApiError> {
    let (caller, _view, _) = app_caller(state, headers, id).await?;
    let action = actions::of_app(&state.pool, action_id, id, &caller.workspace_id, &caller.external_user_id)
        .await?
        .ok_or(ApiError::NotFound)?;
    Ok((caller, action))
}

/// The first of the two confirmations of a delete an app asked for.
///
/// Takes the app token (app_token). Only a delete needs it
/// (`409 confirmation_not_required` otherwise); an action that cannot move
/// answers `409` or `410` with the action as it stands.
#[utoipa::path(
    post,
    path = "/v1/apps/{id}/actions/{action_id}/confirm",
    tag = "chat",
    security(("app_token" = [])),
    params(
        ("id" = String, Path, description = "The `component_id` of an `mcp-app` component"),
        ("action_id" = String, Path, description = "The `action_id` of the app's pending action"),
    ),
    responses((status = 200, description = "The delete is confirmed; Apply may follow", body = AppActionState)),
)]
async fn confirm_app_action(
    State(state): State<ApiState>,
    headers: HeaderMap,
    Path((id, action_id)): Path<(String, String)>,
) -> Result<Json<AppActionState>, ApiError> {
    let (_caller, action) = app_action(&state, &headers, &id, &action_id).await?;
    let current = confirm_once(&state, &action).await?;
    Ok(Json(AppActionState { action: pending_action(&current) }))
}

/// Runs the change an app asked for, once, and answers the app's request.
///
/// Takes the app token (app_token). Of simultaneous applies, one wins; the
/// others answer `409`. A delete must be confirmed first. The answer is
/// the tool's result for the app (`result`, an `isError` one included) or
/// why it failed (`error`); no model step follows.
#[utoipa::path(
    post,
    path = "/v1/apps/{id}/actions/{action_id}/apply",
    tag = "chat",
    security(("app_token" = [])),
    params(
        ("id" = String, Path, description = "The `component_id` of an `mcp-app` component"),
        ("action_id" = String, Path, description = "The `action_id` of the app's pending action"),
    ),
    responses((status = 200, description = "The change ran: the answer for the app", body = AppAnswer)),
)]
async fn apply_app_action(
    State(state): State<ApiState>,
    headers: HeaderMap,
    Path((id, action_id)): Path<(String, String)>,
) -> Result<Json<AppAnswer>, ApiError> {
    let (caller, action) = app_action(&state, &headers, &id, &action_id).await?;
    let from = if action.needs_confirmation() { ActionStatus::ConfirmedOnce } else { ActionStatus::Pending };
    // Run only where it was previewed, while its server still lets apps call it so.
    ensure_bound(&state, &action, from, &caller.scope(&action.id)).await?;
    let now = state.clock.now_ms();
    if !actions::transition(&state.pool, &action_id, &[from], ActionStatus::Executing, now).await? {
        return Err(refusal(&state, &action_id).await);
    }
    let mut action = action;
    action.status = ActionStatus::Executing;
    let detail = serde_json::json!({ "action_id": action_id });
    actions::record_life(&state.pool, &action, &actions::user_actor(&action), "action.applied", None, detail).await;
    state.limits.usage.count(&action.workspace_id, crate::usage::Metric::ToolCalls, 1);
    // Run to the end even if the bridge goes away meanwhile: the outcome
    // is recorded either way, and the action is never left `executing`.
    let engine = state.engine.clone();
    let executed = tokio::spawn(async move {
        crate::engine::execute_for_app(&engine.pool, &engine.workspaces, &engine.sources, &action).await
    })
    .await
    .map_err(anyhow::Error::from)?;
    Ok(Json(match executed {
        Ok(result) => AppAnswer::result(result),
        Err(told) => AppAnswer::refused(told),
    }))
}

/// Declines the change an app asked for.
///
/// Takes the app token (app_token). The bridge then tells the app the
/// visitor declined; the chat goes on as it was.
#[utoipa::path(
    post,
    path = "/v1/apps/{id}/actions/{action_id}/cancel",
    tag = "chat",
    security(("app_token" = [])),
    params(
        ("id" = String, Path, description = "The `component_id` of an `mcp-app` component"),
        ("action_id" = String, Path, description = "The `action_id` of the app's pending action"),
    ),
    responses((status = 200, description = "The change is cancelled", body = AppActionState)),
)]
async fn cancel_app_action(
    State(state): State<ApiState>,
    headers: HeaderMap,
    Path((id, action_id)): Path<(String, String)>,
) -> Result<Json<AppActionState>, ApiError> {
    let (_caller, action) = app_action(&state, &headers, &id, &action_id).await?;
    let open = [ActionStatus::Pending, ActionStatus::ConfirmedOnce];
    if !actions::transition(&state.pool, &action_id, &open, ActionStatus::Cancelled, state.clock.now_ms()).await? {
        return Err(refusal(&state, &action_id).await);
    }
    let detail = serde_json::json!({ "action_id": action_id });
    actions::record_life(&state.pool, &action, &actions::user_actor(&action), "action.cancelled", None, detail).await;
    let current = actions::get(&state.pool, &action_id).await?.ok_or(ApiError::NotFound)?;
    Ok(Json(AppActionState { action: pending_action(&current) }))
}
