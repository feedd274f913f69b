//! Idempotency keys of `POST /v1/chat/turns` (issue #34): which turn a
//! user's key started, so that a send retried with the same key answers
//! that turn instead of starting another. The table's primary key decides
//! which of several simultaneous requests (on any replica) owns a key.

use super::Pool;

/// How long a key is remembered: a retry after that is a new send.
pub const KEPT_MS: i64 = 24 * 60 * 60 * 1000;

/// Whose key: one user of one workspace.
pub struct KeyOf<'a> {
    pub workspace_id: &'a str,
    pub external_user_id: &'a str,
    pub key: &'a str,
}

/// What a request with a key finds.
#[derive(Debug, PartialEq, Eq)]
pub enum Claim {
    /// The key is this request's now: it starts the turn (then [`bind`],
    /// or [`forget`] when it starts none).
    Ours,
    /// The key's turn: its stream is the answer.
    Replay(String),
    /// The key came with another body.
    Reused,
    /// Another request with the key is starting its turn right now.
    InFlight,
}

/// Claims `key` for a request whose body hashes to `body_hash`, at `now`
/// (a key older than [`KEPT_MS`] is forgotten first).
pub async fn claim(pool: &Pool, key: &KeyOf<'_>, body_hash: &str, now: i64) -> anyhow::Result<Claim> {
    sqlx::query(
        "DELETE FROM idempotency_keys WHERE workspace_id = $1 AND external_user_id = $2 AND idempotency_key = $3
         AND created_at <= $4",
    )
    .bind(key.workspace_id)
    .bind(key.external_user_id)
    .bind(key.key)
    .bind(now - KEPT_MS)
    .execute(pool)
    .await?;
    let inserted = sqlx::query(
        "INSERT INTO idempotency_keys (workspace_id, external_user_id, idempotency_key, body_hash, turn_id, created_at)
         VALUES ($1, $2, $3, $4, NULL, $5) ON CONFLICT DO NOTHING",
    )
    .bind(key.workspace_id)
    .bind(key.external_user_id)
    .bind(key.key)
    .bind(body_hash)
    .bind(now)
    .execute(pool)
    .await?;
    if inserted.rows_affected() == 1 {
        return Ok(Claim::Ours);
    }
    let row: Option<(String, Option<String>)> = sqlx::query_as(
        "SELECT body_hash, turn_id FROM idempotency_keys
         WHERE workspace_id = $1 AND external_user_id = $2 AND idempotency_key = $3",
    )
    .bind(key.workspace_id)
    .bind(key.external_user_id)
    .bind(key.key)
    .fetch_optional(pool)
    .await?;
    Ok(match row {
        Some((hash, _)) if hash != body_hash => Claim::Reused,
        Some((_, Some(turn_id))) => Claim::Replay(turn_id),
        // Being started, or forgotten just now (the caller asks again).
        Some((_, None)) | None => Claim::InFlight,
    })
}

/// Names the turn the key's request started.
pub async fn bind(pool: &Pool, key: &KeyOf<'_>, turn_id: &str) -> anyhow::Result<()> {
    sqlx::query(
        "UPDATE idempotency_keys SET turn_id = $1
         WHERE workspace_id = $2 AND external_user_id = $3 AND idempotency_key = $4 AND turn_id IS NULL",
    )
    .bind(turn_id)
    .bind(key.workspace_id)
    .bind(key.external_user_id)
    .bind(key.key)
    .execute(pool)
    .await?;
    Ok(())
}

/// Lets the key go: its request started no turn (refused, or failed), so
/// the same key may try again.
pub async fn forget(pool: &Pool, key: &KeyOf<'_>) -> anyhow::Result<()> {
    sqlx::query(
        "DELETE FROM idempotency_keys
         WHERE workspace_id = $1 AND external_user_id = $2 AND idempotency_key = $3 AND turn_id IS NULL",
    )
    .bind(key.workspace_id)
    .bind(key.external_user_id)
    .bind(key.key)
    .execute(pool)
    .await?;
    Ok(())
}

/// Forgets every key older than [`KEPT_MS`] at `now`; how many.
pub async fn sweep(pool: &Pool, now: i64) -> anyhow::Result<u64> {
    let gone = sqlx::query("DELETE FROM idempotency_keys WHERE created_at <= $1")
        .bind(now - KEPT_MS)
        .execute(pool)
        .await?
        .rows_affected();
    Ok(gone)
}
