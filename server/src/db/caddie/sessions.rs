//! Our own sign-in state for Caddie users (caddie-tool-contract-ct1.md
//! §4): sessions (only a hash of the cookie's token is stored) and the
//! OIDC flows between the redirect and the callback.

use sqlx::FromRow;

use crate::db::Pool;
use crate::ids::{now_ms, random_bytes};

/// How long a session lives.
pub const SESSION_TTL_MS: i64 = 12 * 3600 * 1000;
/// How long a sign-in may take, from redirect to callback.
pub const FLOW_TTL_MS: i64 = 10 * 60 * 1000;

fn token_hash(token: &str) -> String {
    use sha2::{Digest, Sha256};
    hex::encode(Sha256::digest(token.as_bytes()))
}

/// Starts a session; returns the cookie's token (only its hash is stored).
pub async fn create_session(pool: &Pool, username: &str) -> anyhow::Result<String> {
    let token = hex::encode(random_bytes::<32>());
    let now = now_ms();
    sqlx::query("INSERT INTO user_sessions (token_hash, username, created_at, expires_at) VALUES ($1, $2, $3, $4)")
        .bind(token_hash(&token))
        .bind(username)
        .bind(now)
        .bind(now + SESSION_TTL_MS)
        .execute(pool)
        .await?;
    Ok(token)
}

/// The signed-in user of a session token, if the session is live.
pub async fn session_user(pool: &Pool, token: &str) -> anyhow::Result<Option<String>> {
    if token.len() != 64 {
        return Ok(None);
    }
    let row: Option<(String,)> =
        sqlx::query_as("SELECT username FROM user_sessions WHERE token_hash = $1 AND expires_at > $2")
            .bind(token_hash(token))
            .bind(now_ms())
            .fetch_optional(pool)
            .await?;
    Ok(row.map(|(u,)| u))
}

pub async fn delete_session(pool: &Pool, token: &str) -> anyhow::Result<()> {
    sqlx::query("DELETE FROM user_sessions WHERE token_hash = $1").bind(token_hash(token)).execute(pool).await?;
    Ok(())
}

/// Ends every session of a user (revocation, §7).
pub async fn delete_sessions_of(pool: &Pool, username: &str) -> anyhow::Result<u64> {
    Ok(sqlx::query("DELETE FROM user_sessions WHERE username = $1").bind(username).execute(pool).await?.rows_affected())
}

#[derive(Debug, Clone, FromRow)]
pub struct FlowRow {
    pub verifier: String,
    pub nonce: String,
    pub next_path: String,
    pub interactive: i64,
}

pub async fn insert_flow(
    pool: &Pool,
    state: &str,
    verifier: &str,
    nonce: &str,
    next_path: &str,
    interactive: bool,
) -> anyhow::Result<()> {
    let now = now_ms();
    sqlx::query("DELETE FROM oidc_flows WHERE created_at < $1").bind(now - FLOW_TTL_MS).execute(pool).await?;
    sqlx::query(
        "INSERT INTO oidc_flows (state, verifier, nonce, next_path, interactive, created_at) VALUES ($1, $2, $3, $4, $5, $6)",
    )
    .bind(state)
    .bind(verifier)
    .bind(nonce)
    .bind(next_path)
    .bind(i64::from(interactive))
    .bind(now)
    .execute(pool)
    .await?;
    Ok(())
}

/// Takes a flow once: a second callback with the same state finds nothing.
pub async fn take_flow(pool: &Pool, state: &str) -> anyhow::Result<Option<FlowRow>> {
    let row: Option<FlowRow> = sqlx::query_as(
        "SELECT verifier, nonce, next_path, interactive FROM oidc_flows WHERE state = $1 AND created_at > $2",
    )
    .bind(state)
    .bind(now_ms() - FLOW_TTL_MS)
    .fetch_optional(pool)
    .await?;
    let taken = sqlx::query("DELETE FROM oidc_flows WHERE state = $1").bind(state).execute(pool).await?.rows_affected();
    Ok(row.filter(|_| taken == 1))
}

/// Binds `username` to the provider's `issuer` and `sub` at its first
/// sign-in; true when it is bound to exactly these (now or before), false
/// when another subject holds it.
pub async fn bind_identity(pool: &Pool, username: &str, issuer: &str, sub: &str) -> anyhow::Result<bool> {
    sqlx::query(
        "INSERT INTO caddie_identities (username, issuer, sub, created_at) VALUES ($1, $2, $3, $4)
         ON CONFLICT (username) DO NOTHING",
    )
    .bind(username)
    .bind(issuer)
    .bind(sub)
    .bind(now_ms())
    .execute(pool)
    .await?;
    let (bound_issuer, bound_sub): (String, String) =
        sqlx::query_as("SELECT issuer, sub FROM caddie_identities WHERE username = $1")
            .bind(username)
            .fetch_one(pool)
            .await?;
    Ok(bound_issuer == issuer && bound_sub == sub)
}
