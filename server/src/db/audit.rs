//! The audit trail (`audit_log`): who did what to a workspace, and when —
//! never a secret, never erased content.

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
