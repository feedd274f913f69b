//! Status reporting, tool → hub (caddie-tool-contract-ct1.md §5): after a
//! client-visible change the report is pushed at once — awaited by the
//! change, with a short timeout — and otherwise queued in the database and
//! retried with backoff, in `seq` order per assignment, until the hub
//! answers 2xx. `seq` is per-assignment and monotonic, so the hub can
//! ignore a stale report whatever order they arrive in.

use std::time::Duration;

use super::{Caddie, hub_api, store};
use crate::db::Pool;
use crate::ids::{new_id, now_ms};

/// How long a change waits for the first push.
pub const FIRST_PUSH_TIMEOUT: Duration = Duration::from_secs(2);
/// The longest wait between two attempts (the first waits the retry interval).
pub const MAX_BACKOFF_MS: i64 = 10 * 60 * 1000;

/// Reports the state of `workspace_id`'s assignment, if it is a linked
/// space: pushed now, else queued. Never fails the change that caused it.
pub async fn after_change(caddie: &Caddie, pool: &Pool, workspace_id: &str) {
    if let Err(e) = report(caddie, pool, workspace_id).await {
        tracing::warn!(error = format!("{e:#}"), "caddie: status report not recorded");
    }
}

async fn report(caddie: &Caddie, pool: &Pool, workspace_id: &str) -> anyhow::Result<()> {
    let Some(link) = store::link_by_workspace(pool, workspace_id).await? else { return Ok(()) };
    let activity = store::space_activity(pool, workspace_id).await?;
    let seq = next_seq(pool, &link.assignment_id).await?;
    let body = hub_api::status_report(&link.assignment_id, &activity, seq).to_string();
    // Earlier reports still queued go first: the hub sees seq rise.
    let queued_before: Option<(String,)> =
        sqlx::query_as("SELECT id FROM caddie_status_queue WHERE assignment_id = $1 LIMIT 1")
            .bind(&link.assignment_id)
            .fetch_optional(pool)
            .await?;
    if queued_before.is_none() {
        match tokio::time::timeout(FIRST_PUSH_TIMEOUT, push(caddie, &body)).await {
            Ok(Ok(())) => return Ok(()),
            Ok(Err(e)) => tracing::info!(error = format!("{e:#}"), "caddie: status push failed; queued"),
            Err(_) => tracing::info!("caddie: status push timed out; queued"),
        }
    }
    let now = now_ms();
    sqlx::query(
        "INSERT INTO caddie_status_queue (id, assignment_id, seq, body, attempts, next_at, created_at)
         VALUES ($1, $2, $3, $4, 0, $5, $5)",
    )
    .bind(new_id("rep"))
    .bind(&link.assignment_id)
    .bind(seq)
    .bind(&body)
    .bind(now)
    .execute(pool)
    .await?;
    Ok(())
}

async fn next_seq(pool: &Pool, assignment_id: &str) -> anyhow::Result<i64> {
    let mut tx = pool.begin().await?;
    sqlx::query("UPDATE caddie_links SET status_seq = status_seq + 1 WHERE assignment_id = $1")
        .bind(assignment_id)
        .execute(&mut *tx)
        .await?;
    let (seq,): (i64,) = sqlx::query_as("SELECT status_seq FROM caddie_links WHERE assignment_id = $1")
        .bind(assignment_id)
        .fetch_one(&mut *tx)
        .await?;
    tx.commit().await?;
    Ok(seq)
}

/// `POST {hub}/api/tool/report`, signed.
async fn push(caddie: &Caddie, body: &str) -> anyhow::Result<()> {
    let url = caddie.config.hub_origin.join("/api/tool/report")?;
    let request = caddie.hub.post(url).header("content-type", "application/json").body(body.to_owned());
    caddie.signed(request, body.as_bytes()).send().await?.error_for_status()?;
    Ok(())
}

/// Delivers queued reports in `seq` order per assignment: an assignment's
/// oldest report goes first, once due, and the rest follow only after it
/// was accepted. The wait after a failure doubles from `base` up to ten
/// minutes.
pub async fn deliver_due(caddie: &Caddie, pool: &Pool, base: Duration) -> anyhow::Result<usize> {
    let now = now_ms();
    let assignments: Vec<(String,)> =
        sqlx::query_as("SELECT DISTINCT assignment_id FROM caddie_status_queue ORDER BY assignment_id LIMIT 200")
            .fetch_all(pool)
            .await?;
    let mut delivered = 0;
    for (assignment_id,) in assignments {
        let queued: Vec<(String, String, i64, i64)> = sqlx::query_as(
            "SELECT id, body, attempts, next_at FROM caddie_status_queue WHERE assignment_id = $1 ORDER BY seq LIMIT 50",
        )
        .bind(&assignment_id)
        .fetch_all(pool)
        .await?;
        let Some((_, _, _, head_due)) = queued.first() else { continue };
        if *head_due > now {
            continue;
        }
        for (id, body, attempts, _) in queued {
            match push(caddie, &body).await {
                Ok(()) => {
                    sqlx::query("DELETE FROM caddie_status_queue WHERE id = $1").bind(&id).execute(pool).await?;
                    delivered += 1;
                }
                Err(e) => {
                    let wait = (base.as_millis() as i64).saturating_mul(1 << attempts.clamp(0, 20)).min(MAX_BACKOFF_MS);
                    sqlx::query("UPDATE caddie_status_queue SET attempts = attempts + 1, next_at = $1 WHERE id = $2")
                        .bind(now + wait)
                        .bind(&id)
                        .execute(pool)
                        .await?;
                    tracing::info!(
                        error = format!("{e:#}"),
                        assignment_id,
                        attempts = attempts + 1,
                        "caddie: report retried later"
                    );
                    break;
                }
            }
        }
    }
    Ok(delivered)
}

/// The retry loop, every `every` until the process ends; once an hour it
/// also deletes expired sessions, contexts, flows and burnt ids.
pub fn spawn_retries(caddie: std::sync::Arc<Caddie>, pool: Pool, every: Duration) {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut last_cleanup: Option<std::time::Instant> = None;
        loop {
            tick.tick().await;
            if let Err(e) = deliver_due(&caddie, &pool, every).await {
                tracing::warn!(error = format!("{e:#}"), "caddie: report queue failed");
            }
            if last_cleanup.is_none_or(|at| at.elapsed() > Duration::from_secs(3600)) {
                last_cleanup = Some(std::time::Instant::now());
                match store::delete_expired(&pool).await {
                    Ok(n) if n > 0 => tracing::info!(deleted = n, "caddie: expired rows deleted"),
                    Ok(_) => {}
                    Err(e) => tracing::warn!(error = format!("{e:#}"), "caddie: cleanup failed"),
                }
            }
        }
    });
}
