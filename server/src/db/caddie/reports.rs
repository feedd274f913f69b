//! The queue of status reports the hub has not yet accepted
//! (caddie-tool-contract-ct1.md §5): at most one per assignment, its
//! newest — a newer state supersedes an older one still waiting.

use crate::db::Pool;
use crate::ids::{new_id, now_ms};

/// One queued report.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct QueuedReport {
    pub id: String,
    pub seq: i64,
    pub body: String,
    pub attempts: i64,
    pub next_at: i64,
}

/// Drops the reports of this assignment still waiting below `below_seq`:
/// a newer state is on its way, so they would say nothing new.
pub async fn supersede_reports(pool: &Pool, assignment_id: &str, below_seq: i64) -> anyhow::Result<u64> {
    let done = sqlx::query("DELETE FROM caddie_status_queue WHERE assignment_id = $1 AND seq < $2")
        .bind(assignment_id)
        .bind(below_seq)
        .execute(pool)
        .await?;
    Ok(done.rows_affected())
}

/// Queues a report, due at once.
pub async fn queue_report(pool: &Pool, assignment_id: &str, seq: i64, body: &str) -> anyhow::Result<()> {
    let now = now_ms();
    sqlx::query(
        "INSERT INTO caddie_status_queue (id, assignment_id, seq, body, attempts, next_at, created_at)
         VALUES ($1, $2, $3, $4, 0, $5, $5)",
    )
    .bind(new_id("rep"))
    .bind(assignment_id)
    .bind(seq)
    .bind(body)
    .bind(now)
    .execute(pool)
    .await?;
    Ok(())
}

/// Reports waiting for the hub, every assignment's (for metrics).
pub async fn count_queued_reports(pool: &Pool) -> anyhow::Result<i64> {
    let (count,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM caddie_status_queue").fetch_one(pool).await?;
    Ok(count)
}

/// Assignments with queued reports (at most 200 per round).
pub async fn assignments_with_reports(pool: &Pool) -> anyhow::Result<Vec<String>> {
    let rows: Vec<(String,)> =
        sqlx::query_as("SELECT DISTINCT assignment_id FROM caddie_status_queue ORDER BY assignment_id LIMIT 200")
            .fetch_all(pool)
            .await?;
    Ok(rows.into_iter().map(|(id,)| id).collect())
}

/// An assignment's queued reports, oldest `seq` first (at most 50).
pub async fn queued_reports(pool: &Pool, assignment_id: &str) -> anyhow::Result<Vec<QueuedReport>> {
    Ok(sqlx::query_as(
        "SELECT id, seq, body, attempts, next_at FROM caddie_status_queue WHERE assignment_id = $1 ORDER BY seq LIMIT 50",
    )
    .bind(assignment_id)
    .fetch_all(pool)
    .await?)
}

/// The hub accepted this report.
pub async fn delete_report(pool: &Pool, id: &str) -> anyhow::Result<()> {
    sqlx::query("DELETE FROM caddie_status_queue WHERE id = $1").bind(id).execute(pool).await?;
    Ok(())
}

/// The hub did not accept it: one more attempt, at `next_at`.
pub async fn postpone_report(pool: &Pool, id: &str, next_at: i64) -> anyhow::Result<()> {
    sqlx::query("UPDATE caddie_status_queue SET attempts = attempts + 1, next_at = $1 WHERE id = $2")
        .bind(next_at)
        .bind(id)
        .execute(pool)
        .await?;
    Ok(())
}
