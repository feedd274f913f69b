//! Retention: a workspace's conversations older than its `retention_days`
//! (since their last message) are deleted with everything that hangs off
//! them, a few at a time, each in a transaction of its own, never one with
//! a turn running; its attachments older than that too; audit entries
//! older than the operator's
//! `CA_AUDIT_RETENTION_DAYS`.

use super::erasure::{Erased, delete_conversations};
use super::pool::Pool;

const DAY_MS: i64 = 24 * 3600 * 1000;

/// Deletes up to `batch` conversations past their workspace's retention at
/// `now` (ms); how many of each kind went.
pub async fn sweep_conversations(pool: &Pool, now: i64, batch: i64) -> anyhow::Result<Erased> {
    let due: Vec<(String, String)> = sqlx::query_as(
        "SELECT c.id, c.workspace_id FROM conversations c JOIN workspaces w ON w.id = c.workspace_id
         WHERE w.retention_days IS NOT NULL AND c.updated_at < $1 - w.retention_days * $2
           AND NOT EXISTS (SELECT 1 FROM turns t WHERE t.conversation_id = c.id AND t.finished_at IS NULL)
         LIMIT $3",
    )
    .bind(now)
    .bind(DAY_MS)
    .bind(batch)
    .fetch_all(pool)
    .await?;
    let mut erased = Erased::default();
    for (conversation, workspace) in due {
        let mut conn = pool.acquire().await?;
        let mut tx = conn.begin_write().await?;
        // Still idle (a turn may have begun since the query above).
        let scope = "SELECT id FROM conversations WHERE id = $1 AND workspace_id = $2
                     AND NOT EXISTS (SELECT 1 FROM turns t WHERE t.conversation_id = conversations.id AND t.finished_at IS NULL)";
        delete_conversations(&mut tx, scope, &conversation, &workspace, &mut erased).await?;
        tx.commit().await?;
    }
    Ok(erased)
}

/// Deletes up to `batch` attachments older than their workspace's
/// retention at `now` (ms); the store keys of their bytes, for the caller
/// to delete.
pub async fn sweep_attachments(pool: &Pool, now: i64, batch: i64) -> anyhow::Result<Vec<String>> {
    let due: Vec<(String, String)> = sqlx::query_as(
        "SELECT a.id, a.object_key FROM attachments a JOIN workspaces w ON w.id = a.workspace_id
         WHERE w.retention_days IS NOT NULL AND a.created_at < $1 - w.retention_days * $2
         LIMIT $3",
    )
    .bind(now)
    .bind(DAY_MS)
    .bind(batch)
    .fetch_all(pool)
    .await?;
    let mut keys = Vec::with_capacity(due.len());
    for (id, key) in due {
        sqlx::query("DELETE FROM attachments WHERE id = $1").bind(&id).execute(pool).await?;
        keys.push(key);
    }
    Ok(keys)
}

/// Deletes up to `batch` uploads never sent with a message nor read by a
/// knowledge source and older than `max_age_ms` at `now` (ms); the store
/// keys of their bytes.
pub async fn sweep_unsent_attachments(
    pool: &Pool,
    now: i64,
    max_age_ms: i64,
    batch: i64,
) -> anyhow::Result<Vec<String>> {
    let due: Vec<(String, String)> = sqlx::query_as(
        "SELECT a.id, a.object_key FROM attachments a WHERE a.created_at < $1
         AND NOT EXISTS (SELECT 1 FROM message_attachments l WHERE l.attachment_id = a.id)
         AND NOT EXISTS (SELECT 1 FROM knowledge_sources s WHERE s.workspace_id = a.workspace_id
                         AND s.kind = 'file' AND s.config LIKE '%\"' || a.id || '\"%') LIMIT $2",
    )
    .bind(now - max_age_ms)
    .bind(batch)
    .fetch_all(pool)
    .await?;
    let mut keys = Vec::with_capacity(due.len());
    for (id, key) in due {
        // Still unsent: a send may have linked it since the query above.
        let gone = sqlx::query(
            "DELETE FROM attachments WHERE id = $1
             AND NOT EXISTS (SELECT 1 FROM message_attachments l WHERE l.attachment_id = $1)
             AND NOT EXISTS (SELECT 1 FROM knowledge_sources s WHERE s.kind = 'file'
                             AND s.config LIKE '%\"' || $1 || '\"%')",
        )
        .bind(&id)
        .execute(pool)
        .await?;
        if gone.rows_affected() == 1 {
            keys.push(key);
        }
    }
    Ok(keys)
}

/// Deletes audit entries older than `days` at `now` (ms); how many.
pub async fn sweep_audit(pool: &Pool, now: i64, days: i64) -> anyhow::Result<u64> {
    super::audit::prune(pool, now - days * DAY_MS).await
}
