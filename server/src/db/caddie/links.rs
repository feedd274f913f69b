//! Caddie links: an assignment's assistant space (a workspace of its own),
//! its project, participants, stage rail and status-report sequence
//! (caddie-tool-contract-ct1.md §2, §5).

use sqlx::FromRow;
use widget::wire::StopReason;

use super::grants::revoke_launch_grant;
use crate::db::Pool;
use crate::ids::now_ms;

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

/// The next `seq` of an assignment's status reports: rises by one per
/// report, in one transaction, whichever replica asks. `status` is what
/// the report says (remembered for [`status_seq_for`]).
pub async fn next_status_seq(pool: &Pool, assignment_id: &str, status: &str) -> anyhow::Result<i64> {
    let (seq,): (i64,) = sqlx::query_as(
        "UPDATE caddie_links SET status_seq = status_seq + 1, last_status = $1 WHERE assignment_id = $2
         RETURNING status_seq",
    )
    .bind(status)
    .bind(assignment_id)
    .fetch_one(pool)
    .await?;
    Ok(seq)
}

/// The `seq` a report saying `status` carries: the last one when the last
/// report said the same, else the next (one statement, so replicas agree).
pub async fn status_seq_for(pool: &Pool, assignment_id: &str, status: &str) -> anyhow::Result<i64> {
    let (seq,): (i64,) = sqlx::query_as(
        "UPDATE caddie_links
         SET status_seq = CASE WHEN last_status = $1 THEN status_seq ELSE status_seq + 1 END, last_status = $1
         WHERE assignment_id = $2 RETURNING status_seq",
    )
    .bind(status)
    .bind(assignment_id)
    .fetch_one(pool)
    .await?;
    Ok(seq)
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
        failing: matches!(last, Some((Some(reason),))
            if [StopReason::Error, StopReason::ModelUnavailable].iter().any(|r| reason == r.as_str())),
    })
}
