//! Feedback on replies: a user gives a reply a thumbs up or down with an
//! optional comment, changes it or takes it back (embed token); the host
//! reads them all (`GET /v1/workspace/feedback`, api key).

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use widget::wire::Rating;

use super::audit::{decode_cursor, page_size, paged, time_ms};
use super::setup::WorkspaceKey;
use super::state::ApiState;
use crate::auth::Caller;
use crate::db::feedback::{self, FeedbackFilter, NewFeedback};
use crate::http::{ApiError, ApiJson, ApiQuery};
use crate::ids::rfc3339;

/// Longest comment kept, in characters.
const MAX_COMMENT_CHARS: usize = 1000;
/// Feedback per page, by default and at most.
const PAGE: i64 = 50;
const MAX_PAGE: i64 = 500;

pub fn router() -> OpenApiRouter<ApiState> {
    OpenApiRouter::new().routes(routes!(give_feedback, take_back_feedback)).routes(routes!(list_feedback))
}

/// A thumbs up or down, and what the user adds.
#[derive(Deserialize, utoipa::ToSchema)]
struct FeedbackRequest {
    rating: Rating,
    /// At most 1000 characters; blank keeps none.
    #[schema(max_length = 1000)]
    comment: Option<String>,
}

/// The feedback as kept.
#[derive(Serialize, utoipa::ToSchema)]
struct GivenFeedback {
    /// The reply's id (its last message's, whichever of its messages was named).
    message_id: String,
    rating: Rating,
    comment: Option<String>,
    /// RFC 3339.
    updated_at: String,
}

/// The caller's reply `id` names: its conversation and the id its feedback
/// is kept under; 404 for anything else.
async fn reply(state: &ApiState, caller: &Caller, id: &str) -> Result<(String, String), ApiError> {
    if id.len() > 64 {
        return Err(ApiError::NotFound);
    }
    feedback::reply_of(&state.pool, &caller.workspace_id, &caller.external_user_id, id).await?.ok_or(ApiError::NotFound)
}

/// Gives a reply a thumbs up or down, replacing the user's earlier one.
#[utoipa::path(
    put,
    path = "/v1/messages/{id}/feedback",
    tag = "chat",
    security(("embed_token" = [])),
    params(("id" = String, Path, description = "An assistant message of the caller's (a reply's `message_id`)")),
    request_body = FeedbackRequest,
    responses((status = 200, description = "The feedback kept on the reply", body = GivenFeedback)),
)]
async fn give_feedback(
    State(state): State<ApiState>,
    caller: Caller,
    Path(id): Path<String>,
    ApiJson(request): ApiJson<FeedbackRequest>,
) -> Result<Json<GivenFeedback>, ApiError> {
    let comment = request.comment.as_deref().map(str::trim).filter(|c| !c.is_empty());
    if comment.is_some_and(|c| c.chars().count() > MAX_COMMENT_CHARS) {
        return Err(ApiError::BadRequest(format!("comment must be at most {MAX_COMMENT_CHARS} characters")));
    }
    let (conversation_id, message_id) = reply(&state, &caller, &id).await?;
    let given = NewFeedback {
        message_id: &message_id,
        conversation_id: &conversation_id,
        workspace_id: &caller.workspace_id,
        user: &caller.external_user_id,
        rating: request.rating,
        comment,
    };
    let at = feedback::set(&state.pool, given).await?;
    tracing::info!(%message_id, rating = request.rating.as_str(), "feedback given");
    Ok(Json(GivenFeedback {
        message_id,
        rating: request.rating,
        comment: comment.map(str::to_owned),
        updated_at: rfc3339(at),
    }))
}

/// Takes the user's feedback on a reply back.
#[utoipa::path(
    delete,
    path = "/v1/messages/{id}/feedback",
    tag = "chat",
    security(("embed_token" = [])),
    params(("id" = String, Path, description = "An assistant message of the caller's (a reply's `message_id`)")),
    responses((status = 204, description = "None is kept (also when there was none)")),
)]
async fn take_back_feedback(
    State(state): State<ApiState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    let (_, message_id) = reply(&state, &caller, &id).await?;
    feedback::clear(&state.pool, &message_id).await?;
    Ok(StatusCode::NO_CONTENT)
}

#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
struct FeedbackQuery {
    /// Only thumbs up, or only thumbs down.
    rating: Option<Rating>,
    /// Given or changed from this time on (RFC 3339, inclusive).
    #[param(format = DateTime)]
    since: Option<String>,
    /// Given or changed before this time (RFC 3339, exclusive).
    #[param(format = DateTime)]
    until: Option<String>,
    /// 1 to 500 (default 50).
    #[param(minimum = 1, maximum = 500)]
    limit: Option<i64>,
    /// The `next_cursor` of the page before.
    #[param(min_length = 1, max_length = 200)]
    cursor: Option<String>,
}

/// One user's feedback on one reply.
#[derive(Serialize, utoipa::ToSchema)]
struct FeedbackItem {
    message_id: String,
    conversation_id: String,
    /// The end user (`sub`).
    user: String,
    rating: Rating,
    comment: Option<String>,
    /// The reply's text (its last message), at most 500 characters.
    reply: String,
    /// RFC 3339.
    updated_at: String,
}

#[derive(Serialize, utoipa::ToSchema)]
struct FeedbackPage {
    items: Vec<FeedbackItem>,
    /// Pass as `cursor` for the next page; null on the last one.
    next_cursor: Option<String>,
}

/// The workspace's feedback on replies, the newest first.
#[utoipa::path(
    get,
    path = "/v1/workspace/feedback",
    tag = "setup",
    security(("api_key" = [])),
    params(FeedbackQuery),
    responses((status = 200, description = "A page of feedback, newest first", body = FeedbackPage)),
)]
async fn list_feedback(
    State(state): State<ApiState>,
    workspace: WorkspaceKey,
    ApiQuery(query): ApiQuery<FeedbackQuery>,
) -> Result<Json<FeedbackPage>, ApiError> {
    let limit = page_size(query.limit, PAGE, MAX_PAGE)?;
    let filter = FeedbackFilter {
        rating: query.rating,
        since: query.since.as_deref().map(|t| time_ms("since", t)).transpose()?,
        until: query.until.as_deref().map(|t| time_ms("until", t)).transpose()?,
        after: query.cursor.as_deref().map(decode_cursor).transpose()?,
    };
    let rows = feedback::of_workspace(&state.pool, &workspace.id, &filter, limit + 1).await?;
    let (rows, next_cursor) = paged(rows, limit, |r| (r.updated_at, &r.message_id));
    let items = rows
        .into_iter()
        .map(|r| FeedbackItem {
            rating: r.rating,
            updated_at: rfc3339(r.updated_at),
            reply: r.reply.chars().take(500).collect(),
            message_id: r.message_id,
            conversation_id: r.conversation_id,
            user: r.external_user_id,
            comment: r.comment,
        })
        .collect();
    Ok(Json(FeedbackPage { items, next_cursor }))
}
