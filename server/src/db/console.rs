//! Console sessions: one row per signed-in browser, found by the hash of
//! its cookie's token, holding the sealed credential it signed in with.

use crate::db::Pool;

/// A live session: the workspace it is for (none: the operator's) and the
/// sealed credential.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct ConsoleSession {
    pub workspace_id: Option<String>,
    pub sealed_key: String,
}

pub async fn insert(
    pool: &Pool,
    token_hash: &str,
    workspace_id: Option<&str>,
    sealed_key: &str,
    now: i64,
    expires_at: i64,
) -> anyhow::Result<()> {
    sqlx::query("DELETE FROM console_sessions WHERE expires_at <= $1").bind(now).execute(pool).await?;
    sqlx::query(
        "INSERT INTO console_sessions (token_hash, workspace_id, sealed_key, created_at, expires_at)
         VALUES ($1, $2, $3, $4, $5)",
    )
    .bind(token_hash)
    .bind(workspace_id)
    .bind(sealed_key)
    .bind(now)
    .bind(expires_at)
    .execute(pool)
    .await?;
    Ok(())
}

/// The session whose token hashes to `token_hash`, unless it expired.
pub async fn get(pool: &Pool, token_hash: &str, now: i64) -> anyhow::Result<Option<ConsoleSession>> {
    Ok(sqlx::query_as(
        "SELECT workspace_id, sealed_key FROM console_sessions WHERE token_hash = $1 AND expires_at > $2",
    )
    .bind(token_hash)
    .bind(now)
    .fetch_optional(pool)
    .await?)
}

pub async fn delete(pool: &Pool, token_hash: &str) -> anyhow::Result<()> {
    sqlx::query("DELETE FROM console_sessions WHERE token_hash = $1").bind(token_hash).execute(pool).await?;
    Ok(())
}

/// Replaces the credential a session acts with (after the api key's rotation).
pub async fn set_key(pool: &Pool, token_hash: &str, sealed_key: &str) -> anyhow::Result<()> {
    sqlx::query("UPDATE console_sessions SET sealed_key = $1 WHERE token_hash = $2")
        .bind(sealed_key)
        .bind(token_hash)
        .execute(pool)
        .await?;
    Ok(())
}
