//! Conversations of the caller (assistant-api.md §3), so a reload restores
//! the chat. A caller sees only its own workspace's and user's.

use axum::extract::{Path, State};
use axum::routing::get;
use axum::{Json, Router};
use serde::Serialize;
use widget::wire::{ConversationMessage, ConversationView, DisplayCard};

use super::ApiError;
use crate::auth::Caller;
use crate::db;
use crate::state::AppState;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/v1/conversations", get(list_conversations))
        .route("/v1/conversations/{id}", get(get_conversation))
}

#[derive(Serialize)]
struct ConversationSummary {
    id: String,
    title: String,
    updated_at: i64,
}

#[derive(Serialize)]
struct ConversationListResponse {
    conversations: Vec<ConversationSummary>,
}

async fn list_conversations(
    State(state): State<AppState>,
    caller: Caller,
) -> Result<Json<ConversationListResponse>, ApiError> {
    let rows = db::list_conversations(&state.pool, &caller.workspace_id, &caller.external_user_id).await?;
    let conversations =
        rows.into_iter().map(|c| ConversationSummary { id: c.id, title: c.title, updated_at: c.updated_at }).collect();
    Ok(Json(ConversationListResponse { conversations }))
}

/// The user-visible transcript: user messages, and each turn's assistant
/// text and cards as one message (tool calls and results are the model's).
async fn get_conversation(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<ConversationView>, ApiError> {
    let conversation = db::owned_conversation(&state.pool, &id, &caller.workspace_id, &caller.external_user_id)
        .await?
        .ok_or(ApiError::NotFound)?;
    let rows = db::messages(&state.pool, &conversation.id).await?;
    let mut messages: Vec<ConversationMessage> = Vec::new();
    for row in rows {
        match row.role.as_str() {
            "user" => messages.push(ConversationMessage {
                id: row.id,
                role: "user".into(),
                text: row.content,
                html: None,
                cards: Vec::new(),
                created_at: row.created_at,
            }),
            // The last assistant row of a turn carries the whole reply and its cards.
            "assistant" if row.tool_calls.is_none() => {
                let cards: Vec<DisplayCard> =
                    row.cards.as_deref().and_then(|c| serde_json::from_str(c).ok()).unwrap_or_default();
                messages.push(ConversationMessage {
                    id: row.id,
                    role: "assistant".into(),
                    html: Some(crate::markdown::render(&row.content)),
                    text: row.content,
                    cards,
                    created_at: row.created_at,
                });
            }
            _ => {}
        }
    }
    Ok(Json(ConversationView { id: conversation.id, messages, pending_action: None }))
}
