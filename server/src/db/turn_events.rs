//! The stored events of turns' streams, for clients that resume one.

use super::pool::Pool;

/// One stored event.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct StoredEvent {
    pub seq: i64,
    pub kind: String,
    pub data: String,
}

/// Stores events of a turn, in one transaction.
pub async fn insert(pool: &Pool, turn_id: &str, events: &[(u64, &str, String)], now: i64) -> anyhow::Result<()> {
    let mut tx = pool.begin().await?;
    for (seq, kind, data) in events {
        sqlx::query("INSERT INTO turn_events (turn_id, seq, kind, data, created_at) VALUES ($1, $2, $3, $4, $5)")
            .bind(turn_id)
            .bind(i64::try_from(*seq)?)
            .bind(*kind)
            .bind(data)
            .bind(now)
            .execute(&mut *tx)
            .await?;
    }
    tx.commit().await?;
    Ok(())
}

/// A turn's events after `seq`, in order (at most `limit`).
pub async fn after(pool: &Pool, turn_id: &str, seq: i64, limit: i64) -> anyhow::Result<Vec<StoredEvent>> {
    Ok(sqlx::query_as("SELECT seq, kind, data FROM turn_events WHERE turn_id = $1 AND seq > $2 ORDER BY seq LIMIT $3")
        .bind(turn_id)
        .bind(seq)
        .bind(limit)
        .fetch_all(pool)
        .await?)
}

/// The kind of a turn's last stored event, if any.
pub async fn last_kind(pool: &Pool, turn_id: &str) -> anyhow::Result<Option<(i64, String)>> {
    Ok(sqlx::query_as("SELECT seq, kind FROM turn_events WHERE turn_id = $1 ORDER BY seq DESC LIMIT 1")
        .bind(turn_id)
        .fetch_optional(pool)
        .await?)
}

/// Where a turn stands.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct TurnState {
    pub started_at: i64,
    pub finished_at: Option<i64>,
    pub stop_reason: Option<String>,
}

/// Where a turn of this workspace's user stands; `None` when there is no
/// such turn of theirs.
pub async fn owned_turn(
    pool: &Pool,
    turn_id: &str,
    workspace_id: &str,
    user: &str,
) -> anyhow::Result<Option<TurnState>> {
    Ok(sqlx::query_as(
        "SELECT t.started_at, t.finished_at, t.stop_reason FROM turns t JOIN conversations c ON c.id = t.conversation_id
         WHERE t.id = $1 AND c.workspace_id = $2 AND c.external_user_id = $3",
    )
    .bind(turn_id)
    .bind(workspace_id)
    .bind(user)
    .fetch_optional(pool)
    .await?)
}

/// Forgets the events of turns that ended before `before`.
pub async fn forget_before(pool: &Pool, before: i64) -> anyhow::Result<u64> {
    let done = sqlx::query(
        "DELETE FROM turn_events WHERE turn_id IN (SELECT id FROM turns WHERE finished_at IS NOT NULL AND finished_at < $1)",
    )
    .bind(before)
    .execute(pool)
    .await?;
    Ok(done.rows_affected())
}
