//! The launch hand-off's tables (caddie-tool-contract-ct1.md §3, §5):
//! burnt launch-token `jti`s, launch contexts, and the nonces of signed
//! hub calls — each burnt by one INSERT under its primary key, so two
//! replicas cannot both accept the same one.

use sqlx::FromRow;

use crate::db::Pool;
use crate::ids::{now_ms, random_bytes};

/// How long a launch context lives (display context only).
pub const CTX_TTL_MS: i64 = 24 * 3600 * 1000;

/// Burns a launch token's `jti`: true the first time, false for a replay.
/// One INSERT under the primary key — no check-then-insert race.
pub async fn burn_jti(pool: &Pool, jti: &str, exp_secs: i64) -> anyhow::Result<bool> {
    let now = now_ms();
    // A burnt jti past its token's expiry (and skew) can never verify again.
    sqlx::query("DELETE FROM caddie_consumed_jti WHERE expires_at < $1").bind(now - 120_000).execute(pool).await?;
    let inserted = sqlx::query(
        "INSERT INTO caddie_consumed_jti (jti, consumed_at, expires_at) VALUES ($1, $2, $3) ON CONFLICT (jti) DO NOTHING",
    )
    .bind(jti)
    .bind(now)
    .bind(exp_secs.saturating_mul(1000))
    .execute(pool)
    .await?
    .rows_affected();
    Ok(inserted == 1)
}

#[derive(Debug, Clone, FromRow)]
pub struct CtxRow {
    pub id: String,
    pub assignment_id: String,
    pub project_slug: String,
    pub project_name: String,
    pub stage_label: String,
    pub return_url: String,
    pub sub: String,
    pub jti: String,
    pub token_exp: i64,
}

pub struct NewCtx<'a> {
    pub assignment_id: &'a str,
    pub project_slug: &'a str,
    pub project_name: &'a str,
    pub stage_label: &'a str,
    pub return_url: &'a str,
    pub sub: &'a str,
    pub jti: &'a str,
    pub token_exp: i64,
}

/// A launch context with a 128-bit random id (expired ones are cleared).
pub async fn insert_ctx(pool: &Pool, c: NewCtx<'_>) -> anyhow::Result<String> {
    let id = hex::encode(random_bytes::<16>());
    let now = now_ms();
    sqlx::query("DELETE FROM caddie_launch_ctx WHERE expires_at < $1").bind(now).execute(pool).await?;
    sqlx::query(
        "INSERT INTO caddie_launch_ctx (id, assignment_id, project_slug, project_name, stage_label, return_url, sub,
             jti, token_exp, created_at, expires_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
    )
    .bind(&id)
    .bind(c.assignment_id)
    .bind(c.project_slug)
    .bind(c.project_name)
    .bind(c.stage_label)
    .bind(c.return_url)
    .bind(c.sub)
    .bind(c.jti)
    .bind(c.token_exp)
    .bind(now)
    .bind(now + CTX_TTL_MS)
    .execute(pool)
    .await?;
    Ok(id)
}

/// A launch context that has not expired.
pub async fn ctx(pool: &Pool, id: &str) -> anyhow::Result<Option<CtxRow>> {
    if id.len() != 32 || !id.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Ok(None);
    }
    Ok(sqlx::query_as(
        "SELECT id, assignment_id, project_slug, project_name, stage_label, return_url, sub, jti, token_exp
         FROM caddie_launch_ctx WHERE id = $1 AND expires_at > $2",
    )
    .bind(id)
    .bind(now_ms())
    .fetch_optional(pool)
    .await?)
}

/// Records a verified call's nonce until `expires_at` (unix seconds);
/// false for a replay. Nonces past their window are cleared first.
pub async fn remember_nonce(pool: &Pool, nonce: &str, now: i64, expires_at: i64) -> anyhow::Result<bool> {
    sqlx::query("DELETE FROM caddie_nonces WHERE expires_at < $1").bind(now).execute(pool).await?;
    let inserted = sqlx::query(
        "INSERT INTO caddie_nonces (nonce, seen_at, expires_at) VALUES ($1, $2, $3) ON CONFLICT (nonce) DO NOTHING",
    )
    .bind(nonce)
    .bind(now)
    .bind(expires_at)
    .execute(pool)
    .await?
    .rows_affected();
    Ok(inserted == 1)
}
