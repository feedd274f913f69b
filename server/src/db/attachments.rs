//! Attachments as recorded (the bytes are in the object store): each one
//! its user's own, so every read names the workspace and the user.

use sqlx::FromRow;

use super::Pool;

/// An attachment as stored.
#[derive(Debug, Clone, FromRow)]
pub struct Attachment {
    pub id: String,
    pub workspace_id: String,
    pub external_user_id: String,
    pub name: String,
    pub media_type: String,
    pub size: i64,
    pub sha256: String,
    pub object_key: String,
    pub created_at: i64,
}

pub async fn insert(pool: &Pool, a: &Attachment) -> anyhow::Result<()> {
    sqlx::query(
        "INSERT INTO attachments (id, workspace_id, external_user_id, name, media_type, size, sha256, object_key, created_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
    )
    .bind(&a.id)
    .bind(&a.workspace_id)
    .bind(&a.external_user_id)
    .bind(&a.name)
    .bind(&a.media_type)
    .bind(a.size)
    .bind(&a.sha256)
    .bind(&a.object_key)
    .bind(a.created_at)
    .execute(pool)
    .await?;
    Ok(())
}

/// Attachment `id`, whoever's (for a signed link, which names its workspace).
pub async fn by_id(pool: &Pool, id: &str) -> anyhow::Result<Option<Attachment>> {
    Ok(sqlx::query_as(
        "SELECT id, workspace_id, external_user_id, name, media_type, size, sha256, object_key, created_at
         FROM attachments WHERE id = $1",
    )
    .bind(id)
    .fetch_optional(pool)
    .await?)
}

/// Deletes attachment `id` of the user when no message carries it: its
/// object key, or none when there was no such attachment to delete.
pub async fn delete_unsent(
    pool: &Pool,
    workspace_id: &str,
    external_user_id: &str,
    id: &str,
) -> anyhow::Result<Option<String>> {
    Ok(sqlx::query_scalar(
        "DELETE FROM attachments WHERE id = $1 AND workspace_id = $2 AND external_user_id = $3
         AND NOT EXISTS (SELECT 1 FROM message_attachments WHERE attachment_id = $1)
         RETURNING object_key",
    )
    .bind(id)
    .bind(workspace_id)
    .bind(external_user_id)
    .fetch_optional(pool)
    .await?)
}

/// The user's attachment `id`, if it is theirs.
pub async fn owned(
    pool: &Pool,
    workspace_id: &str,
    external_user_id: &str,
    id: &str,
) -> anyhow::Result<Option<Attachment>> {
    Ok(sqlx::query_as(
        "SELECT id, workspace_id, external_user_id, name, media_type, size, sha256, object_key, created_at
         FROM attachments WHERE id = $1 AND workspace_id = $2 AND external_user_id = $3",
    )
    .bind(id)
    .bind(workspace_id)
    .bind(external_user_id)
    .fetch_optional(pool)
    .await?)
}

/// Links attachments to the user message that sends them, in order, each
/// with the text the model is given of it (a text file's, bounded).
pub async fn link(pool: &Pool, message_id: &str, attachments: &[(String, Option<String>)]) -> anyhow::Result<()> {
    for (position, (id, text)) in attachments.iter().enumerate() {
        sqlx::query(
            "INSERT INTO message_attachments (message_id, attachment_id, position, text) VALUES ($1, $2, $3, $4)",
        )
        .bind(message_id)
        .bind(id)
        .bind(position as i64)
        .bind(text)
        .execute(pool)
        .await?;
    }
    Ok(())
}

/// An attachment as sent with a message: what it is and its text for the model.
#[derive(Debug, Clone, FromRow)]
pub struct Sent {
    pub message_id: String,
    pub id: String,
    pub name: String,
    pub media_type: String,
    pub size: i64,
    pub text: Option<String>,
    pub object_key: String,
}

/// Every attachment sent in the conversation, in order (one still kept:
/// the retention sweep may have deleted older ones).
pub async fn sent(pool: &Pool, conversation_id: &str) -> anyhow::Result<Vec<Sent>> {
    Ok(sqlx::query_as(
        "SELECT l.message_id, a.id, a.name, a.media_type, a.size, l.text, a.object_key
         FROM message_attachments l JOIN attachments a ON a.id = l.attachment_id
         JOIN messages m ON m.id = l.message_id
         WHERE m.conversation_id = $1 ORDER BY m.seq, l.position",
    )
    .bind(conversation_id)
    .fetch_all(pool)
    .await?)
}

/// [`sent`] by message, as the conversation shows them.
pub async fn sent_in(
    pool: &Pool,
    conversation_id: &str,
) -> anyhow::Result<std::collections::HashMap<String, Vec<widget::wire::AttachmentRef>>> {
    let mut by_message: std::collections::HashMap<String, Vec<widget::wire::AttachmentRef>> = Default::default();
    for s in sent(pool, conversation_id).await? {
        by_message.entry(s.message_id).or_default().push(widget::wire::AttachmentRef {
            id: s.id,
            name: s.name,
            media_type: s.media_type,
            size: u64::try_from(s.size).unwrap_or(0),
            url: None,
        });
    }
    Ok(by_message)
}
