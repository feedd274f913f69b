//! The stored events of turns' streams, for clients that resume one.

use super::pool::Pool;

/// One stored event.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct StoredEvent {
    pub seq: i64,
    pub kind: String,
    pub data: String,
}

/// Rows per statement when events are stored: 3 parameters each, far
/// below SQLite's 32,766 and PostgreSQL's 65,535.
const ROWS_PER_INSERT: usize = 500;

/// Stores events of a turn: one statement per 500 (in one transaction when
/// there are more), then wakes the streams that follow the turn — in this
/// process at once, on other replicas by the statement's own `NOTIFY` on
/// PostgreSQL (`super::bells`). Up to 500 go as one write of
/// [`Pool::write_together`]: on SQLite in one commit with other turns'
/// writes that wait at the same time.
pub async fn insert(pool: &Pool, turn_id: &str, events: &[(u64, &str, &str)], now: i64) -> anyhow::Result<()> {
    let notify = pool.is_postgres();
    if events.len() <= ROWS_PER_INSERT {
        let sql = insert_sql(events.len(), notify);
        pool.write_together(bind_rows(sqlx::query(&sql), turn_id, events, now)?).await?;
    } else {
        let mut conn = pool.acquire().await?;
        let mut tx = conn.begin_write().await?;
        for rows in events.chunks(ROWS_PER_INSERT) {
            // PostgreSQL delivers a transaction's notifications once, at its commit.
            let sql = insert_sql(rows.len(), notify);
            bind_rows(sqlx::query(&sql), turn_id, rows, now)?.execute(&mut *tx).await?;
        }
        tx.commit().await?;
    }
    pool.ring(turn_id);
    Ok(())
}

/// The statement that stores `rows` events (`$1` the turn, `$2` the time,
/// three parameters an event from `$3`).
fn insert_sql(rows: usize, notify: bool) -> String {
    let values: Vec<String> =
        (0..rows).map(|i| format!("($1, ${}, ${}, ${}, $2)", 3 * i + 3, 3 * i + 4, 3 * i + 5)).collect();
    let insert = format!("INSERT INTO turn_events (turn_id, seq, kind, data, created_at) VALUES {}", values.join(", "));
    // One round trip: a data-modifying WITH runs whole whether or not the
    // query reads it, and the notification goes out when it commits
    // (counted, because the Any driver has no type for pg_notify's void).
    if notify {
        format!(
            "WITH stored AS ({insert}), notified AS (SELECT pg_notify('{}', $1)) SELECT count(*) FROM notified",
            super::bells::CHANNEL
        )
    } else {
        insert
    }
}

type Query<'q> = sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments<'q>>;

/// `query` ([`insert_sql`]) with `rows`' values bound.
fn bind_rows<'q>(
    mut query: Query<'q>,
    turn_id: &'q str,
    rows: &'q [(u64, &'q str, &'q str)],
    now: i64,
) -> anyhow::Result<Query<'q>> {
    query = query.bind(turn_id).bind(now);
    for (seq, kind, data) in rows {
        query = query.bind(i64::try_from(*seq)?).bind(*kind).bind(*data);
    }
    Ok(query)
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
    /// The language its conversation's user reads, when a turn named one.
    pub lang: Option<String>,
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
        "SELECT t.started_at, t.finished_at, t.stop_reason, c.lang FROM turns t JOIN conversations c ON c.id = t.conversation_id
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
    // Also the events of turns that are gone (erased, or past retention):
    // a batch written behind the stream can land just after its turn went.
    let done = sqlx::query(
        "DELETE FROM turn_events WHERE turn_id IN (SELECT id FROM turns WHERE finished_at IS NOT NULL AND finished_at < $1)
         OR NOT EXISTS (SELECT 1 FROM turns t WHERE t.id = turn_events.turn_id)",
    )
    .bind(before)
    .execute(pool)
    .await?;
    Ok(done.rows_affected())
}
