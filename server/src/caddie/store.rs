//! The Caddie tables: links, burnt launch tokens, launch contexts,
//! sessions, OIDC flows, grants and the audit log.

use sqlx::FromRow;

use crate::db::Pool;
use crate::ids::{new_id, now_ms, random_bytes};

/// How long a launch context lives (display context only).
pub const CTX_TTL_MS: i64 = 24 * 3600 * 1000;
/// How long a session lives.
pub const SESSION_TTL_MS: i64 = 12 * 3600 * 1000;
/// How long a sign-in may take, from redirect to callback.
pub const FLOW_TTL_MS: i64 = 10 * 60 * 1000;

#[derive(Debug, Clone, FromRow)]
pub struct LinkRow {
    pub assignment_id: String,
    pub workspace_id: String,
    pub project_id: String,
    pub project_name: String,
    pub participants: String,
    pub participants_at: i64,
    pub return_url: Option<String>,
}

impl LinkRow {
    pub fn participants(&self) -> Vec<String> {
        serde_json::from_str(&self.participants).unwrap_or_default()
    }
}

const LINK_COLUMNS: &str =
    "assignment_id, workspace_id, project_id, project_name, participants, participants_at, return_url";

pub async fn link_by_assignment(pool: &Pool, assignment_id: &str) -> anyhow::Result<Option<LinkRow>> {
    Ok(sqlx::query_as(&format!("SELECT {LINK_COLUMNS} FROM caddie_links WHERE assignment_id = $1"))
        .bind(assignment_id)
        .fetch_optional(pool)
        .await?)
}

pub async fn link_by_workspace(pool: &Pool, workspace_id: &str) -> anyhow::Result<Option<LinkRow>> {
    Ok(sqlx::query_as(&format!("SELECT {LINK_COLUMNS} FROM caddie_links WHERE workspace_id = $1"))
        .bind(workspace_id)
        .fetch_optional(pool)
        .await?)
}

/// What provisioning writes (§2).
pub struct NewLink<'a> {
    pub assignment_id: &'a str,
    pub workspace_id: &'a str,
    pub project_id: &'a str,
    pub project_name: &'a str,
    pub config: &'a serde_json::Value,
    pub participants: &'a [String],
    pub stages: &'a serde_json::Value,
}

pub async fn insert_link(pool: &Pool, l: NewLink<'_>) -> anyhow::Result<()> {
    let now = now_ms();
    sqlx::query(
        "INSERT INTO caddie_links (assignment_id, workspace_id, project_id, project_name, config, participants,
             participants_at, stages, created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $7, $7)",
    )
    .bind(l.assignment_id)
    .bind(l.workspace_id)
    .bind(l.project_id)
    .bind(l.project_name)
    .bind(l.config.to_string())
    .bind(serde_json::to_string(l.participants).expect("names serialize"))
    .bind(now)
    .bind(l.stages.to_string())
    .execute(pool)
    .await?;
    Ok(())
}

pub async fn set_participants(pool: &Pool, assignment_id: &str, participants: &[String]) -> anyhow::Result<()> {
    sqlx::query(
        "UPDATE caddie_links SET participants = $1, participants_at = $2, updated_at = $2 WHERE assignment_id = $3",
    )
    .bind(serde_json::to_string(participants).expect("names serialize"))
    .bind(now_ms())
    .bind(assignment_id)
    .execute(pool)
    .await?;
    Ok(())
}

/// The hub's stage rail, kept as a read-only mirror (§2).
pub async fn set_stages(pool: &Pool, assignment_id: &str, stages: &serde_json::Value) -> anyhow::Result<()> {
    sqlx::query("UPDATE caddie_links SET stages = $1, updated_at = $2 WHERE assignment_id = $3")
        .bind(stages.to_string())
        .bind(now_ms())
        .bind(assignment_id)
        .execute(pool)
        .await?;
    Ok(())
}

pub async fn set_return_url(pool: &Pool, assignment_id: &str, return_url: &str) -> anyhow::Result<()> {
    sqlx::query("UPDATE caddie_links SET return_url = $1 WHERE assignment_id = $2")
        .bind(return_url)
        .bind(assignment_id)
        .execute(pool)
        .await?;
    Ok(())
}

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

pub async fn has_grant(pool: &Pool, workspace_id: &str, username: &str) -> anyhow::Result<bool> {
    let row: Option<(String,)> =
        sqlx::query_as("SELECT username FROM space_grants WHERE workspace_id = $1 AND username = $2")
            .bind(workspace_id)
            .bind(username)
            .fetch_optional(pool)
            .await?;
    Ok(row.is_some())
}

/// Grants a launch-provisioned access to exactly one space; idempotent.
/// True when the grant is new.
pub async fn grant_from_launch(
    pool: &Pool,
    workspace_id: &str,
    username: &str,
    level: &str,
    assignment_id: &str,
) -> anyhow::Result<bool> {
    let inserted = sqlx::query(
        "INSERT INTO space_grants (workspace_id, username, level, launch_provisioned, assignment_id, created_at)
         VALUES ($1, $2, $3, 1, $4, $5) ON CONFLICT (workspace_id, username) DO NOTHING",
    )
    .bind(workspace_id)
    .bind(username)
    .bind(level)
    .bind(assignment_id)
    .bind(now_ms())
    .execute(pool)
    .await?
    .rows_affected();
    Ok(inserted == 1)
}

pub async fn audit(
    pool: &Pool,
    actor: &str,
    action: &str,
    workspace_id: Option<&str>,
    username: Option<&str>,
    detail: &serde_json::Value,
) -> anyhow::Result<()> {
    sqlx::query(
        "INSERT INTO audit_log (id, at, actor, action, workspace_id, username, detail) VALUES ($1, $2, $3, $4, $5, $6, $7)",
    )
    .bind(new_id("aud"))
    .bind(now_ms())
    .bind(actor)
    .bind(action)
    .bind(workspace_id)
    .bind(username)
    .bind(detail.to_string())
    .execute(pool)
    .await?;
    Ok(())
}

/// Replaces the participants and drops the launch-provisioned grants of
/// anyone no longer listed (§5's convergence); returns who lost access.
pub async fn apply_participants(pool: &Pool, link: &LinkRow, participants: &[String]) -> anyhow::Result<Vec<String>> {
    set_participants(pool, &link.assignment_id, participants).await?;
    let granted: Vec<(String,)> =
        sqlx::query_as("SELECT username FROM space_grants WHERE workspace_id = $1 AND launch_provisioned = 1")
            .bind(&link.workspace_id)
            .fetch_all(pool)
            .await?;
    let mut dropped = Vec::new();
    for (username,) in granted {
        if !participants.contains(&username) {
            revoke_launch_grant(pool, &link.workspace_id, &username).await?;
            dropped.push(username);
        }
    }
    Ok(dropped)
}

/// Drops a launch-provisioned grant; true if there was one.
pub async fn revoke_launch_grant(pool: &Pool, workspace_id: &str, username: &str) -> anyhow::Result<bool> {
    let deleted =
        sqlx::query("DELETE FROM space_grants WHERE workspace_id = $1 AND username = $2 AND launch_provisioned = 1")
            .bind(workspace_id)
            .bind(username)
            .execute(pool)
            .await?
            .rows_affected();
    Ok(deleted > 0)
}

pub async fn status_seq(pool: &Pool, assignment_id: &str) -> anyhow::Result<i64> {
    let row: Option<(i64,)> = sqlx::query_as("SELECT status_seq FROM caddie_links WHERE assignment_id = $1")
        .bind(assignment_id)
        .fetch_optional(pool)
        .await?;
    Ok(row.map_or(0, |(s,)| s))
}

/// What the space looks like for the status report (§5).
pub struct SpaceActivity {
    pub conversations: i64,
    /// Users with a change waiting for their answer.
    pub waiting: Vec<String>,
    /// The newest finished turn failed.
    pub failing: bool,
}

pub async fn space_activity(pool: &Pool, workspace_id: &str) -> anyhow::Result<SpaceActivity> {
    let (conversations,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM conversations WHERE workspace_id = $1")
        .bind(workspace_id)
        .fetch_one(pool)
        .await?;
    let waiting: Vec<(String,)> = sqlx::query_as(
        "SELECT DISTINCT external_user_id FROM actions
         WHERE workspace_id = $1 AND status IN ('pending', 'confirmed_once') AND expires_at > $2 ORDER BY external_user_id",
    )
    .bind(workspace_id)
    .bind(now_ms())
    .fetch_all(pool)
    .await?;
    let last: Option<(Option<String>,)> = sqlx::query_as(
        "SELECT t.stop_reason FROM turns t JOIN conversations c ON c.id = t.conversation_id
         WHERE c.workspace_id = $1 AND t.finished_at IS NOT NULL ORDER BY t.finished_at DESC LIMIT 1",
    )
    .bind(workspace_id)
    .fetch_optional(pool)
    .await?;
    Ok(SpaceActivity {
        conversations,
        waiting: waiting.into_iter().map(|(u,)| u).collect(),
        failing: matches!(last, Some((Some(reason),)) if reason == "error"),
    })
}

/// Deletes what can no longer be used: expired sessions, launch contexts,
/// sign-in flows, and burnt jtis and nonces past every validity window.
pub async fn delete_expired(pool: &Pool) -> anyhow::Result<u64> {
    let now = now_ms();
    let mut deleted = 0;
    for (sql, cutoff) in [
        ("DELETE FROM user_sessions WHERE expires_at < $1", now),
        ("DELETE FROM caddie_launch_ctx WHERE expires_at < $1", now),
        ("DELETE FROM oidc_flows WHERE created_at < $1", now - FLOW_TTL_MS),
        ("DELETE FROM caddie_consumed_jti WHERE expires_at < $1", now - 120_000),
        ("DELETE FROM caddie_nonces WHERE expires_at < $1", now / 1000),
    ] {
        deleted += sqlx::query(sql).bind(cutoff).execute(pool).await?.rows_affected();
    }
    Ok(deleted)
}
