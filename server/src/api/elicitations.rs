//! A tool's request for the user's input, answered (our extension of
//! assistant-api.md, docs/mcp.md "Elicitation"): `POST
//! /v1/elicitations/{id}` with the visitor's embed token. The answer is
//! checked against the form on the server, recorded once (one conditional
//! UPDATE), and read by the turn that waits for it on whatever replica.

use axum::Json;
use axum::extract::{Path, State};
use serde::Serialize;
use serde_json::json;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use widget::wire::{ElicitAction, ElicitationAnswer, ElicitationField};

use super::state::ApiState;
use crate::auth::Caller;
use crate::db::elicitations;
use crate::http::{ApiError, ApiJson};

pub fn router() -> OpenApiRouter<ApiState> {
    OpenApiRouter::new().routes(routes!(answer_elicitation))
}

/// The answer as recorded.
#[derive(Serialize, utoipa::ToSchema)]
struct ElicitationAnswered {
    elicitation_id: String,
    action: ElicitAction,
}

/// Answers a tool's request for input (an `elicitation` event).
///
/// `accept` with `content`: the form's values by field name, each checked
/// (`400` names the field); `decline` or `cancel` without. `404` for a
/// request that is not the caller's; `409 elicitation_answered` once it
/// was answered, or its tool call ended; `409 elicitation_closed` when the
/// turn that asked has ended (or died with its process).
#[utoipa::path(
    post,
    path = "/v1/elicitations/{id}",
    tag = "chat",
    security(("embed_token" = [])),
    params(("id" = String, Path, description = "The `elicitation_id` of an `elicitation` event")),
    request_body = ElicitationAnswer,
    responses((status = 200, description = "Recorded; the tool receives it", body = ElicitationAnswered)),
)]
async fn answer_elicitation(
    State(state): State<ApiState>,
    caller: Caller,
    Path(id): Path<String>,
    ApiJson(answer): ApiJson<ElicitationAnswer>,
) -> Result<Json<ElicitationAnswered>, ApiError> {
    let row = elicitations::owned(&state.pool, &id, &caller.workspace_id, &caller.external_user_id)
        .await?
        .ok_or(ApiError::NotFound)?;
    let answered = || {
        ApiError::Conflict(
            "elicitation_answered",
            "This request was answered already, or is no longer waited for.".into(),
        )
    };
    if row.status != "pending" {
        return Err(answered());
    }
    // A turn that died with its process (or ended) waits for nothing: the
    // visitor is told so, and the request is closed.
    let now = crate::ids::now_ms();
    let cutoff = now - state.engine.limits.longest_turn().as_millis() as i64;
    if !elicitations::waited_for(&state.pool, &row.turn_id, cutoff).await? {
        elicitations::close(&state.pool, std::slice::from_ref(&id), now).await?;
        return Err(ApiError::Conflict(
            "elicitation_closed",
            "The assistant is no longer waiting for this answer: the turn that asked has ended. Ask again.".into(),
        ));
    }
    let content = match (answer.action, &answer.content) {
        (ElicitAction::Accept, content) => {
            let content = content.clone().unwrap_or_default();
            let fields: Vec<ElicitationField> = serde_json::from_str(&row.fields).map_err(anyhow::Error::from)?;
            crate::mcp::elicit::check(&fields, &content).map_err(ApiError::BadRequest)?;
            Some(serde_json::to_string(&content).map_err(anyhow::Error::from)?)
        }
        (_, Some(_)) => return Err(ApiError::BadRequest("content goes with accept only".into())),
        (_, None) => None,
    };
    if !elicitations::answer(&state.pool, &id, answer.action.as_str(), content.as_deref(), now).await? {
        return Err(answered());
    }
    let detail = json!({ "elicitation_id": id, "tool": row.tool, "action": answer.action.as_str() });
    crate::db::audit::record(
        &state.pool,
        &format!("user:{}", caller.external_user_id),
        "elicitation.answered",
        Some(&caller.workspace_id),
        Some(&caller.external_user_id),
        &detail,
    )
    .await?;
    Ok(Json(ElicitationAnswered { elicitation_id: id, action: answer.action }))
}
