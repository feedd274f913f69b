//! Components shown in a conversation, and their current data.

use sqlx::FromRow;

use super::Pool;
use crate::ids::{new_id, now_ms};

#[derive(Debug, Clone, FromRow)]
pub struct ComponentRow {
    pub id: String,
    pub conversation_id: String,
    pub message_id: String,
    pub call_id: String,
    pub kind: String,
    pub data: String,
    pub tools: String,
}

impl ComponentRow {
    pub fn data(&self) -> serde_json::Value {
        serde_json::from_str(&self.data).unwrap_or_default()
    }

    pub fn tools(&self) -> Vec<String> {
        serde_json::from_str(&self.tools).unwrap_or_default()
    }
}

const COLUMNS: &str = "id, conversation_id, message_id, call_id, kind, data, tools";

/// The tool call a component came from.
pub async fn call_of(pool: &Pool, id: &str) -> anyhow::Result<Option<String>> {
    let row: Option<(String,)> =
        sqlx::query_as("SELECT call_id FROM components WHERE id = $1").bind(id).fetch_optional(pool).await?;
    Ok(row.map(|(call,)| call))
}

/// What a tool result shows: a new component, or new data for the ones of
/// its kind already shown.
#[derive(Debug, PartialEq, Eq)]
pub enum Shown {
    New(String),
    /// The id of the newest component of the kind.
    Updated(String),
}

/// Shows `kind` with `data`: when the conversation already has components of
/// this kind and `refresh` is set, they all take the new data (the latest
/// state of one thing, such as a cart); otherwise a new component is added.
#[expect(clippy::too_many_arguments, reason = "one row's columns")]
pub async fn show(
    pool: &Pool,
    conversation_id: &str,
    message_id: &str,
    call_id: &str,
    kind: &str,
    data: &serde_json::Value,
    tools: &[String],
    refresh: bool,
) -> anyhow::Result<Shown> {
    let now = now_ms();
    let data = data.to_string();
    if refresh && let Some(id) = refresh_kind(pool, conversation_id, kind, &data).await? {
        return Ok(Shown::Updated(id));
    }
    let id = new_id("cmp");
    sqlx::query(
        "INSERT INTO components (id, conversation_id, message_id, call_id, kind, data, tools, created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8)",
    )
    .bind(&id)
    .bind(conversation_id)
    .bind(message_id)
    .bind(call_id)
    .bind(kind)
    .bind(&data)
    .bind(serde_json::to_string(tools).expect("names serialize"))
    .bind(now)
    .execute(pool)
    .await?;
    // Older components of the kind show the same, current state.
    sqlx::query("UPDATE components SET data = $1, updated_at = $2 WHERE conversation_id = $3 AND kind = $4")
        .bind(&data)
        .bind(now)
        .bind(conversation_id)
        .bind(kind)
        .execute(pool)
        .await?;
    Ok(Shown::New(id))
}

/// Gives every component of `kind` in the conversation the new data; the
/// newest one's id, or none when the kind is not shown.
pub async fn refresh_kind(
    pool: &Pool,
    conversation_id: &str,
    kind: &str,
    data: &str,
) -> anyhow::Result<Option<String>> {
    let updated =
        sqlx::query("UPDATE components SET data = $1, updated_at = $2 WHERE conversation_id = $3 AND kind = $4")
            .bind(data)
            .bind(now_ms())
            .bind(conversation_id)
            .bind(kind)
            .execute(pool)
            .await?
            .rows_affected();
    if updated == 0 {
        return Ok(None);
    }
    let newest: Option<(String,)> = sqlx::query_as(
        "SELECT id FROM components WHERE conversation_id = $1 AND kind = $2 ORDER BY created_at DESC, id DESC LIMIT 1",
    )
    .bind(conversation_id)
    .bind(kind)
    .fetch_optional(pool)
    .await?;
    Ok(newest.map(|(id,)| id))
}

/// The conversation's components, oldest first.
pub async fn in_conversation(pool: &Pool, conversation_id: &str) -> anyhow::Result<Vec<ComponentRow>> {
    Ok(sqlx::query_as(&format!("SELECT {COLUMNS} FROM components WHERE conversation_id = $1 ORDER BY created_at, id"))
        .bind(conversation_id)
        .fetch_all(pool)
        .await?)
}

/// The component, only if its conversation belongs to this workspace and user.
pub async fn owned(
    pool: &Pool,
    id: &str,
    workspace_id: &str,
    external_user_id: &str,
) -> anyhow::Result<Option<ComponentRow>> {
    Ok(sqlx::query_as(
        "SELECT c.id, c.conversation_id, c.message_id, c.call_id, c.kind, c.data, c.tools
         FROM components c JOIN conversations v ON v.id = c.conversation_id
         WHERE c.id = $1 AND v.workspace_id = $2 AND v.external_user_id = $3",
    )
    .bind(id)
    .bind(workspace_id)
    .bind(external_user_id)
    .fetch_optional(pool)
    .await?)
}
