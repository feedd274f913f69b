//! Who may use a space: grants (a launch provisions one, the hub's
//! revocation and reconcile drop them) and the audit log of both.

use crate::db::Pool;
use crate::ids::now_ms;

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
