//! The audit trail (`audit_log`): who did what to a workspace, and when —
//! never a secret, never erased content. Read newest first, filtered, a
//! page at a time (`GET /v1/audit`).

use sqlx::FromRow;

use super::pool::Pool;
use crate::ids::{new_id, now_ms};

/// Records `action` by `actor` (`api-key`, `caddie-hub`, …), about
/// `username` when it concerns a user.
pub async fn record(
    pool: &Pool,
    actor: &str,
    action: &str,
    workspace_id: Option<&str>,
    username: Option<&str>,
    detail: &serde_json::Value,
) -> anyhow::Result<()> {
    record_entry(pool, Entry { actor, action, workspace_id, username, tool: None, outcome: None, detail }).await
}

/// An entry of the trail.
pub struct Entry<'a> {
    pub actor: &'a str,
    pub action: &'a str,
    pub workspace_id: Option<&'a str>,
    pub username: Option<&'a str>,
    /// The tool it is about (a pending action's).
    pub tool: Option<&'a str>,
    /// How it ended (an executed action's `success`, `error`, …).
    pub outcome: Option<&'a str>,
    pub detail: &'a serde_json::Value,
}

pub async fn record_entry(pool: &Pool, e: Entry<'_>) -> anyhow::Result<()> {
    sqlx::query(
        "INSERT INTO audit_log (id, at, actor, action, workspace_id, username, tool, outcome, detail)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
    )
    .bind(new_id("aud"))
    .bind(now_ms())
    .bind(e.actor)
    .bind(e.action)
    .bind(e.workspace_id)
    .bind(e.username)
    .bind(e.tool)
    .bind(e.outcome)
    .bind(e.detail.to_string())
    .execute(pool)
    .await?;
    Ok(())
}

/// An entry as stored.
#[derive(Debug, Clone, FromRow)]
pub struct AuditRow {
    pub id: String,
    pub at: i64,
    pub actor: String,
    pub action: String,
    pub username: Option<String>,
    pub tool: Option<String>,
    pub outcome: Option<String>,
    pub detail: String,
}

/// Which entries of a workspace to read: every filter optional.
#[derive(Debug, Default, Clone)]
pub struct Filter {
    pub username: Option<String>,
    pub action: Option<String>,
    pub tool: Option<String>,
    pub outcome: Option<String>,
    /// From this time on (ms, inclusive).
    pub since: Option<i64>,
    /// Before this time (ms, exclusive).
    pub until: Option<i64>,
    /// After this entry, in the newest-first order: `(at, id)` of the last one read.
    pub after: Option<(i64, String)>,
}

/// Up to `limit` entries of `workspace_id` matching `filter`, newest first.
pub async fn list(pool: &Pool, workspace_id: &str, filter: &Filter, limit: i64) -> anyhow::Result<Vec<AuditRow>> {
    let (after_at, after_id) = filter.after.clone().unzip();
    Ok(sqlx::query_as(
        "SELECT id, at, actor, action, username, tool, outcome, detail FROM audit_log
         WHERE workspace_id = $1
           AND ($2 IS NULL OR username = $2) AND ($3 IS NULL OR action = $3)
           AND ($4 IS NULL OR tool = $4) AND ($5 IS NULL OR outcome = $5)
           AND ($6 IS NULL OR at >= $6) AND ($7 IS NULL OR at < $7)
           AND ($8 IS NULL OR at < $8 OR (at = $8 AND id < $9))
         ORDER BY at DESC, id DESC LIMIT $10",
    )
    .bind(workspace_id)
    .bind(filter.username.as_deref())
    .bind(filter.action.as_deref())
    .bind(filter.tool.as_deref())
    .bind(filter.outcome.as_deref())
    .bind(filter.since)
    .bind(filter.until)
    .bind(after_at)
    .bind(after_id)
    .bind(limit)
    .fetch_all(pool)
    .await?)
}

/// Deletes entries older than `before` (ms); how many.
pub async fn prune(pool: &Pool, before: i64) -> anyhow::Result<u64> {
    Ok(sqlx::query("DELETE FROM audit_log WHERE at < $1").bind(before).execute(pool).await?.rows_affected())
}
