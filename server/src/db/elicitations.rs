//! A tool's requests for the user's input (`elicitation` events): written
//! when the server asks, answered once through the API (one conditional
//! UPDATE decides), read back by the turn that waits, on whatever replica.

use sqlx::FromRow;

use super::Pool;

/// A request as stored.
#[derive(Debug, Clone, FromRow)]
pub struct ElicitationRow {
    pub id: String,
    pub turn_id: String,
    pub conversation_id: String,
    pub workspace_id: String,
    pub external_user_id: String,
    pub call_id: String,
    pub tool: String,
    /// The form's fields (`widget::wire::ElicitationField`), as JSON.
    pub fields: String,
    /// `pending`, then `accept`, `decline` or `cancel`.
    pub status: String,
    /// An accepted answer's values (JSON), until the turn has read them.
    pub content: Option<String>,
}

const COLUMNS: &str =
    "id, turn_id, conversation_id, workspace_id, external_user_id, call_id, tool, fields, status, content";

/// What a new request holds.
pub struct NewElicitation<'a> {
    pub id: &'a str,
    pub turn_id: &'a str,
    pub conversation_id: &'a str,
    pub workspace_id: &'a str,
    pub external_user_id: &'a str,
    pub call_id: &'a str,
    pub tool: &'a str,
    pub fields: &'a str,
}

pub async fn insert(pool: &Pool, e: NewElicitation<'_>, now: i64) -> anyhow::Result<()> {
    sqlx::query(
        "INSERT INTO elicitations (id, turn_id, conversation_id, workspace_id, external_user_id, call_id, tool, fields,
             status, content, created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'pending', NULL, $9, $9)",
    )
    .bind(e.id)
    .bind(e.turn_id)
    .bind(e.conversation_id)
    .bind(e.workspace_id)
    .bind(e.external_user_id)
    .bind(e.call_id)
    .bind(e.tool)
    .bind(e.fields)
    .bind(now)
    .execute(pool)
    .await?;
    Ok(())
}

/// The user's request, if it is theirs.
pub async fn owned(pool: &Pool, id: &str, workspace_id: &str, user: &str) -> anyhow::Result<Option<ElicitationRow>> {
    Ok(sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM elicitations WHERE id = $1 AND workspace_id = $2 AND external_user_id = $3"
    ))
    .bind(id)
    .bind(workspace_id)
    .bind(user)
    .fetch_optional(pool)
    .await?)
}

/// Answers a pending request (`status`: accept, decline or cancel); false
/// when it was answered already, or is no longer waited for.
pub async fn answer(pool: &Pool, id: &str, status: &str, content: Option<&str>, now: i64) -> anyhow::Result<bool> {
    let done = sqlx::query(
        "UPDATE elicitations SET status = $1, content = $2, updated_at = $3 WHERE id = $4 AND status = 'pending'",
    )
    .bind(status)
    .bind(content)
    .bind(now)
    .bind(id)
    .execute(pool)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Of `ids`, the ones answered: their status and values; the values are
/// not kept after this read.
pub async fn take_answers(pool: &Pool, ids: &[String]) -> anyhow::Result<Vec<(String, String, Option<String>)>> {
    let mut answered = Vec::new();
    for id in ids {
        let row: Option<(String, Option<String>)> =
            sqlx::query_as("SELECT status, content FROM elicitations WHERE id = $1 AND status <> 'pending'")
                .bind(id)
                .fetch_optional(pool)
                .await?;
        if let Some((status, content)) = row {
            sqlx::query("UPDATE elicitations SET content = NULL WHERE id = $1").bind(id).execute(pool).await?;
            answered.push((id.clone(), status, content));
        }
    }
    Ok(answered)
}

/// Ends the requests of `ids` still pending (their tool call ended, or the
/// turn did): an answer after this is refused.
pub async fn close(pool: &Pool, ids: &[String], now: i64) -> anyhow::Result<()> {
    for id in ids {
        sqlx::query("UPDATE elicitations SET status = 'cancel', updated_at = $1 WHERE id = $2 AND status = 'pending'")
            .bind(now)
            .bind(id)
            .execute(pool)
            .await?;
    }
    Ok(())
}

/// Closes the requests still pending whose turn cannot be waiting for them
/// any more: it ended, or it began before `cutoff` (longer ago than any
/// turn may run: its process died with it). An answer after this is refused.
pub async fn close_stuck(pool: &Pool, cutoff: i64, now: i64) -> anyhow::Result<u64> {
    let closed = sqlx::query(
        "UPDATE elicitations SET status = 'cancel', updated_at = $1 WHERE status = 'pending' AND (created_at < $2
           OR turn_id IN (SELECT id FROM turns WHERE finished_at IS NOT NULL OR started_at < $2))",
    )
    .bind(now)
    .bind(cutoff)
    .execute(pool)
    .await?;
    Ok(closed.rows_affected())
}

/// True while the turn that asked can still be waiting for the answer:
/// not finished, and begun at `cutoff` or later.
pub async fn waited_for(pool: &Pool, turn_id: &str, cutoff: i64) -> anyhow::Result<bool> {
    let live: Option<(i64,)> =
        sqlx::query_as("SELECT started_at FROM turns WHERE id = $1 AND finished_at IS NULL AND started_at >= $2")
            .bind(turn_id)
            .bind(cutoff)
            .fetch_optional(pool)
            .await?;
    Ok(live.is_some())
}
