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
