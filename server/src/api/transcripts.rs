//! The workspace's conversations, for the host (api key): read-only, by
//! user and by day of last activity, a page at a time; one conversation as
//! its user saw it.

use axum::Json;
use axum::extract::{Path, State};
use serde::{Deserialize, Serialize};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use widget::wire::ConversationMessage;

use super::audit::{decode_cursor, page_size, paged, time_ms};
use super::conversations::transcript;
use super::setup::WorkspaceKey;
use super::state::ApiState;
use crate::db::{self, ConversationFilter};
use crate::http::{ApiError, ApiQuery};
use crate::ids::rfc3339;

/// Conversations per page, by default and at most.
const PAGE: i64 = 50;
const MAX_PAGE: i64 = 500;

pub fn router() -> OpenApiRouter<ApiState> {
    OpenApiRouter::new()
        .routes(routes!(list_workspace_conversations))
        .routes(routes!(get_workspace_conversation))
        .routes(routes!(conversation_as_suite))
}

#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
struct ConversationQuery {
    /// Only this end user's (`sub`).
    #[param(min_length = 1, max_length = 256)]
    user: Option<String>,
    /// Active from this time on (RFC 3339, inclusive).
    #[param(format = DateTime)]
    since: Option<String>,
    /// Active before this time (RFC 3339, exclusive).
    #[param(format = DateTime)]
    until: Option<String>,
    /// 1 to 500 conversations (default 50).
    #[param(minimum = 1, maximum = 500)]
    limit: Option<i64>,
    /// The `next_cursor` of the page before.
    #[param(min_length = 1, max_length = 200)]
    cursor: Option<String>,
}

/// One conversation in the list.
#[derive(Serialize, utoipa::ToSchema)]
struct ConversationItem {
    id: String,
    /// Its end user (`sub`).
    user: String,
    title: String,
    /// Its last activity (RFC 3339).
    updated_at: String,
}

#[derive(Serialize, utoipa::ToSchema)]
struct ConversationPage {
    items: Vec<ConversationItem>,
    /// Pass as `cursor` for the next page; null on the last one.
    next_cursor: Option<String>,
}

/// The workspace's conversations, the most recently active first.
#[utoipa::path(
    get,
    path = "/v1/workspace/conversations",
    tag = "setup",
    security(("api_key" = [])),
    params(ConversationQuery),
    responses((status = 200, description = "A page of the workspace's conversations, newest first", body = ConversationPage)),
)]
async fn list_workspace_conversations(
    State(state): State<ApiState>,
    workspace: WorkspaceKey,
    ApiQuery(query): ApiQuery<ConversationQuery>,
) -> Result<Json<ConversationPage>, ApiError> {
    if query.user.as_ref().is_some_and(|u| u.is_empty() || u.chars().count() > 256) {
        return Err(ApiError::BadRequest("user must be 1 to 256 characters".into()));
    }
    let limit = page_size(query.limit, PAGE, MAX_PAGE)?;
    let filter = ConversationFilter {
        user: query.user,
        since: query.since.as_deref().map(|t| time_ms("since", t)).transpose()?,
        until: query.until.as_deref().map(|t| time_ms("until", t)).transpose()?,
        after: query.cursor.as_deref().map(decode_cursor).transpose()?,
    };
    let rows = db::workspace_conversations(&state.pool, &workspace.id, &filter, limit + 1).await?;
    let (rows, next_cursor) = paged(rows, limit, |r| (r.updated_at, &r.id));
    let items = rows
        .into_iter()
        .map(|r| ConversationItem {
            updated_at: rfc3339(r.updated_at),
            id: r.id,
            user: r.external_user_id,
            title: r.title,
        })
        .collect();
    Ok(Json(ConversationPage { items, next_cursor }))
}

/// One conversation of the workspace, as its user saw it.
#[derive(Serialize, utoipa::ToSchema)]
struct WorkspaceConversation {
    id: String,
    user: String,
    title: String,
    updated_at: String,
    messages: Vec<ConversationMessage>,
}

/// One of the workspace's conversations, read-only, as its user saw it.
#[utoipa::path(
    get,
    path = "/v1/workspace/conversations/{id}",
    tag = "setup",
    security(("api_key" = [])),
    params(("id" = String, Path, description = "The conversation's id")),
    responses((status = 200, description = "The conversation's whole transcript", body = WorkspaceConversation)),
)]
async fn get_workspace_conversation(
    State(state): State<ApiState>,
    workspace: WorkspaceKey,
    Path(id): Path<String>,
) -> Result<Json<WorkspaceConversation>, ApiError> {
    let conversation = db::workspace_conversation(&state.pool, &workspace.id, &id).await?.ok_or(ApiError::NotFound)?;
    let messages = transcript(&state, &conversation).await?;
    Ok(Json(WorkspaceConversation {
        updated_at: rfc3339(conversation.updated_at),
        id: conversation.id,
        user: conversation.external_user_id,
        title: conversation.title,
        messages,
    }))
}

/// A conversation saved as an assistant test (issue #46).
#[derive(Serialize, utoipa::ToSchema)]
struct SavedSuite {
    /// The suite (one case) as data: the visitor's messages in order, the
    /// tools each turn called with their arguments as expectations, the
    /// change each left waiting and what the visitor did with it.
    #[schema(value_type = Object)]
    suite: serde_json::Value,
    /// The same as YAML, to edit and run (docs/assistant-tests.md).
    yaml: String,
}

/// One of the workspace's conversations as an assistant test to edit
/// (the console's **Save as test**).
#[utoipa::path(
    get,
    path = "/v1/workspace/conversations/{id}/suite",
    tag = "tests",
    security(("api_key" = [])),
    params(("id" = String, Path, description = "The conversation's id")),
    responses((status = 200, description = "The conversation as a suite of one case", body = SavedSuite)),
)]
async fn conversation_as_suite(
    State(state): State<ApiState>,
    workspace: WorkspaceKey,
    Path(id): Path<String>,
) -> Result<Json<SavedSuite>, ApiError> {
    use crate::suites::capture::{self, Proposed, Said};
    let conversation = db::workspace_conversation(&state.pool, &workspace.id, &id).await?.ok_or(ApiError::NotFound)?;
    let messages = db::messages(&state.pool, &conversation.id).await?;
    let sent = db::attachments::sent(&state.pool, &conversation.id).await?;
    let said: Vec<Said> = messages
        .iter()
        .map(|m| Said {
            role: m.role.as_str().to_owned(),
            text: m.content.clone(),
            tool_calls: m
                .tool_calls
                .as_deref()
                .and_then(|raw| serde_json::from_str::<Vec<crate::llm::ToolCall>>(raw).ok())
                .unwrap_or_default()
                .into_iter()
                .map(|c| {
                    let arguments =
                        serde_json::from_str(&c.arguments).unwrap_or(serde_json::Value::String(c.arguments));
                    (c.id, c.name, arguments)
                })
                .collect(),
            files: sent.iter().filter(|a| a.message_id == m.id).map(|a| a.name.clone()).collect(),
        })
        .collect();
    let proposed: Vec<Proposed> = db::actions::in_conversation(&state.pool, &conversation.id)
        .await?
        .into_iter()
        .map(|a| Proposed {
            arguments: a.arguments(),
            call_id: a.call_id,
            tool: a.tool,
            status: a.status,
            confirmations_required: a.confirmations_required,
        })
        .collect();
    let suite = capture::suite(&conversation.title, &said, &proposed);
    let yaml = capture::to_yaml(&suite);
    Ok(Json(SavedSuite { suite, yaml }))
}
