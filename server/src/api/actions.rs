//! Pending actions (assistant-api.md §3): `confirm` (a delete's first
//! step), `apply` (executes exactly once, then the model replies) and
//! `cancel` (the model hears the user declined, then replies). Every state
//! change is a conditional UPDATE: of fifty simultaneous applies, one wins.

use axum::Extension;
use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use widget::wire::{ActionStatus, PendingAction};

use super::chat::{Admitted, admit, claim, release, stream_turn};
use super::state::ApiState;
use crate::auth::Caller;
use crate::client_addr::ClientAddr;
use crate::db::actions::{self, ActionRow};
use crate::engine::{TurnStart, pending_action};
use crate::http::ApiError;

/// Longest cancel reason kept, in characters.
const MAX_REASON_CHARS: usize = 500;

pub fn router() -> OpenApiRouter<ApiState> {
    OpenApiRouter::new().routes(routes!(confirm_action)).routes(routes!(apply_action)).routes(routes!(cancel_action))
}

/// `confirm`'s answer: the delete, now confirmed once.
#[derive(Serialize, utoipa::ToSchema)]
struct Confirmed {
    action: PendingAction,
}

async fn owned_action(state: &ApiState, caller: &Caller, id: &str) -> Result<ActionRow, ApiError> {
    actions::owned(&state.pool, id, &caller.workspace_id, &caller.external_user_id).await?.ok_or(ApiError::NotFound)
}

/// Why an action did not move: read its current state and say so.
pub(super) async fn refusal(state: &ApiState, id: &str) -> ApiError {
    let Ok(Some(mut action)) = actions::get(&state.pool, id).await else { return ApiError::NotFound };
    let now = state.clock.now_ms();
    if action.status.is_open() && action.is_expired(now) {
        let _ = actions::expire(&state.pool, id, now).await;
        action.status = ActionStatus::Expired;
    }
    let (status, code, message) = match action.status {
        ActionStatus::Expired => (StatusCode::GONE, "expired", "this action has expired; ask again"),
        ActionStatus::Executing => (StatusCode::CONFLICT, "action_in_progress", "this action is being applied"),
        ActionStatus::Succeeded | ActionStatus::Failed => {
            (StatusCode::CONFLICT, "already_applied", "this action was already applied")
        }
        ActionStatus::Stale => {
            (StatusCode::CONFLICT, "stale", "this change went out of date before it ran; apply its fresh preview")
        }
        ActionStatus::Cancelled => (StatusCode::CONFLICT, "action_cancelled", "this action was cancelled"),
        ActionStatus::Pending if action.needs_confirmation() => {
            (StatusCode::CONFLICT, "confirmation_required", "a delete must be confirmed before it is applied")
        }
        ActionStatus::Pending | ActionStatus::ConfirmedOnce => {
            (StatusCode::CONFLICT, "action_in_progress", "this action cannot move right now")
        }
    };
    ApiError::Action { status, code, message, action: Box::new(pending_action(&action)) }
}

/// The first of a delete's two confirmations.
///
/// Only a delete needs it (`409 confirmation_not_required` otherwise);
/// confirming twice is harmless. An action that cannot move answers
/// `409` or `410` with the action as it stands.
#[utoipa::path(
    post,
    path = "/v1/actions/{id}/confirm",
    tag = "chat",
    security(("embed_token" = [])),
    params(("id" = String, Path, description = "The `action_id` of a `pending_action`")),
    responses((status = 200, description = "The delete is confirmed; Apply may follow", body = Confirmed)),
)]
async fn confirm_action(
    State(state): State<ApiState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let action = owned_action(&state, &caller, &id).await?;
    let current = confirm_once(&state, &action).await?;
    Ok(Json(Confirmed { action: pending_action(&current) }).into_response())
}

/// A delete's first confirmation (the chat's or an app's): `action`
/// pending → confirmed once, recorded; confirming twice is harmless. The
/// action as it stands, or `409 confirmation_not_required` for a change
/// that is not a delete, or why it cannot move ([`refusal`]).
pub(super) async fn confirm_once(state: &ApiState, action: &ActionRow) -> Result<ActionRow, ApiError> {
    if !action.needs_confirmation() {
        return Err(ApiError::Action {
            status: StatusCode::CONFLICT,
            code: "confirmation_not_required",
            message: "only a delete needs a separate confirmation; apply it directly",
            action: Box::new(pending_action(action)),
        });
    }
    let (id, now) = (&action.id, state.clock.now_ms());
    let moved =
        actions::transition(&state.pool, id, &[ActionStatus::Pending], ActionStatus::ConfirmedOnce, now).await?;
    let current = actions::get(&state.pool, id).await?.ok_or(ApiError::NotFound)?;
    if moved {
        let detail = serde_json::json!({ "action_id": id });
        actions::record_life(&state.pool, &current, &actions::user_actor(&current), "action.confirmed", None, detail)
            .await;
    }
    if moved || (current.status == ActionStatus::ConfirmedOnce && !current.is_expired(now)) {
        tracing::info!(action_id = %id, "delete confirmed once");
        return Ok(current);
    }
    Err(refusal(state, id).await)
}

/// Before an Apply moves `action` from `from`: it runs only where it was
/// previewed, while the host still offers it (`engine::binding`). When it
/// no longer does, it ends failed and the answer is `409` with why; a host
/// that cannot be asked is `502`, in the language of the action's
/// conversation. An action not in `from` is left to the move to refuse.
pub(super) async fn ensure_bound(
    state: &ApiState,
    action: &ActionRow,
    from: ActionStatus,
    scope: &crate::host::ExecutionScope,
) -> Result<(), ApiError> {
    let now = state.clock.now_ms();
    if action.status != from || action.is_expired(now) {
        return Ok(());
    }
    let bound = match crate::engine::binding(&state.workspaces, &state.engine.sources, scope, action).await {
        Ok(bound) => bound,
        Err(error) => {
            tracing::warn!(code = error.code(), %error, "apply: the host's tools could not be listed");
            let lang = crate::db::conversation_lang(&state.pool, &action.conversation_id).await?;
            return Err(ApiError::BadGateway(error.code(), error.told_in(lang)));
        }
    };
    let Some(why) = bound else { return Ok(()) };
    crate::engine::refuse(&state.pool, action, why, now).await?;
    let current = actions::get(&state.pool, &action.id).await?.ok_or(ApiError::NotFound)?;
    Err(ApiError::Action {
        status: StatusCode::CONFLICT,
        code: why.code(),
        message: why.message(),
        action: Box::new(pending_action(&current)),
    })
}

/// Executes the action once and streams the model's reply.
///
/// Of simultaneous applies, one wins; the others answer `409`. A delete
/// must be confirmed first.
#[utoipa::path(
    post,
    path = "/v1/actions/{id}/apply",
    tag = "chat",
    security(("embed_token" = [])),
    params(("id" = String, Path, description = "The `action_id` of a `pending_action`")),
    responses(
        (status = 200, description = super::openapi::TURN_STREAM, content_type = "text/event-stream", body = String),
    ),
)]
async fn apply_action(
    State(state): State<ApiState>,
    caller: Caller,
    client: Option<Extension<ClientAddr>>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let action = owned_action(&state, &caller, &id).await?;
    let from = if action.needs_confirmation() { ActionStatus::ConfirmedOnce } else { ActionStatus::Pending };
    ensure_bound(&state, &action, from, &caller.scope(&action.id)).await?;
    let (admitted, turn_id) =
        begin(&state, &caller, client.as_deref(), &action, &[from], ActionStatus::Executing).await?;
    let mut action = action;
    action.status = ActionStatus::Executing;
    tracing::info!(action_id = %id, "action applied");
    let detail = serde_json::json!({ "action_id": id });
    actions::record_life(&state.pool, &action, &actions::user_actor(&action), "action.applied", None, detail).await;
    let conversation_id = action.conversation_id.clone();
    let lang = crate::db::conversation_lang(&state.pool, &conversation_id).await?;
    Ok(stream_turn(&state, admitted, caller, conversation_id, turn_id, TurnStart::Applied(Box::new(action)), lang)
        .into_response())
}

/// Admits the turn an answer to an action starts, claims its conversation
/// and moves the action `from` → `to`: the turn's place and id, or why not (the
/// action as it stands when it cannot move, or its conversation is busy).
async fn begin(
    state: &ApiState,
    caller: &Caller,
    client: Option<&ClientAddr>,
    action: &ActionRow,
    from: &[ActionStatus],
    to: ActionStatus,
) -> Result<(Admitted, String), ApiError> {
    let admitted = admit(state, caller, client).await?;
    let Ok(turn_id) = claim(state, &action.conversation_id).await else {
        return Err(refusal(state, &action.id).await);
    };
    match actions::transition(&state.pool, &action.id, from, to, state.clock.now_ms()).await {
        Ok(true) => Ok((admitted, turn_id)),
        moved => {
            release(state, &turn_id).await;
            moved?;
            Err(refusal(state, &action.id).await)
        }
    }
}

/// `cancel`'s optional body.
#[derive(Deserialize, Default, utoipa::ToSchema)]
struct CancelRequest {
    /// Why the user declined, told to the model (at most 500 characters kept).
    #[serde(default)]
    reason: Option<String>,
}

/// Cancels the action and streams the model's answer to the refusal.
///
/// The body is optional: none, `null`, `{}` or `{"reason": "…"}`.
#[utoipa::path(
    post,
    path = "/v1/actions/{id}/cancel",
    tag = "chat",
    security(("embed_token" = [])),
    params(("id" = String, Path, description = "The `action_id` of a `pending_action`")),
    request_body(content = Option<CancelRequest>, content_type = "application/json"),
    responses(
        (status = 200, description = super::openapi::TURN_STREAM, content_type = "text/event-stream", body = String),
    ),
)]
async fn cancel_action(
    State(state): State<ApiState>,
    caller: Caller,
    client: Option<Extension<ClientAddr>>,
    Path(id): Path<String>,
    body: axum::body::Bytes,
) -> Result<Response, ApiError> {
    // The body is optional: none, `null`, `{}` or `{"reason": "…"}`.
    let request: CancelRequest = if body.iter().all(u8::is_ascii_whitespace) {
        CancelRequest::default()
    } else {
        serde_json::from_slice::<Option<CancelRequest>>(&body)
            .map_err(|e| ApiError::BadRequest(format!("invalid body: {e}")))?
            .unwrap_or_default()
    };
    let action = owned_action(&state, &caller, &id).await?;
    let open = [ActionStatus::Pending, ActionStatus::ConfirmedOnce];
    let (admitted, turn_id) =
        begin(&state, &caller, client.as_deref(), &action, &open, ActionStatus::Cancelled).await?;
    let reason = request
        .reason
        .map(|r| r.chars().filter(|c| !c.is_control()).take(MAX_REASON_CHARS).collect::<String>())
        .map(|r| r.trim().to_owned())
        .filter(|r| !r.is_empty());
    tracing::info!(action_id = %id, "action cancelled");
    let detail = serde_json::json!({ "action_id": id, "reason": reason });
    actions::record_life(&state.pool, &action, &actions::user_actor(&action), "action.cancelled", None, detail).await;
    let conversation_id = action.conversation_id.clone();
    let lang = crate::db::conversation_lang(&state.pool, &conversation_id).await?;
    Ok(stream_turn(
        &state,
        admitted,
        caller,
        conversation_id,
        turn_id,
        TurnStart::Declined(Box::new(action), reason),
        lang,
    )
    .into_response())
}
