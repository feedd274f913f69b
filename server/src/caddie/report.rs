//! Status reporting, tool → hub (caddie-tool-contract-ct1.md §5): after a
//! client-visible change the report is pushed at once — awaited by the
//! change, with a short timeout — and otherwise queued in the database and
//! retried with backoff, in `seq` order per assignment, until the hub
//! answers 2xx. `seq` is per-assignment and monotonic, so the hub can
//! ignore a stale report whatever order they arrive in.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;

use super::hub_api;
use super::state::Caddie;
use crate::db::Pool;
use crate::db::caddie as store;
use crate::engine::TurnFinished;
use crate::ids::now_ms;

/// How long a change waits for the first push.
pub const FIRST_PUSH_TIMEOUT: Duration = Duration::from_secs(2);
/// The longest wait between two attempts (the first waits the retry interval).
pub const MAX_BACKOFF_MS: i64 = 10 * 60 * 1000;

/// Reports a linked space's state to the hub after each of its turns.
pub struct StatusReporter {
    pub caddie: Arc<Caddie>,
    pub pool: Pool,
}

impl TurnFinished for StatusReporter {
    fn turn_finished<'a>(&'a self, workspace_id: &'a str) -> BoxFuture<'a, ()> {
        Box::pin(after_change(&self.caddie, &self.pool, workspace_id))
    }
}

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
    let seq = store::next_status_seq(pool, &link.assignment_id).await?;
    let body = hub_api::status_report(&link.assignment_id, &activity, seq).to_string();
    // Earlier reports still queued go first: the hub sees seq rise.
    if !store::has_queued_reports(pool, &link.assignment_id).await? {
        match tokio::time::timeout(FIRST_PUSH_TIMEOUT, push(caddie, &body)).await {
            Ok(Ok(())) => {
                crate::metrics::caddie_report("pushed");
                return Ok(());
            }
            Ok(Err(e)) => tracing::info!(error = format!("{e:#}"), "caddie: status push failed; queued"),
            Err(_) => tracing::info!("caddie: status push timed out; queued"),
        }
    }
    store::queue_report(pool, &link.assignment_id, seq, &body).await?;
    crate::metrics::caddie_report("queued");
    Ok(())
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
    let mut delivered = 0;
    for assignment_id in store::assignments_with_reports(pool).await? {
        let queued = store::queued_reports(pool, &assignment_id).await?;
        if queued.first().is_none_or(|head| head.next_at > now) {
            continue;
        }
        for report in queued {
            match push(caddie, &report.body).await {
                Ok(()) => {
                    store::delete_report(pool, &report.id).await?;
                    crate::metrics::caddie_report("retried");
                    delivered += 1;
                }
                Err(e) => {
                    crate::metrics::caddie_report("failed");
                    let attempts = report.attempts;
                    let wait = (base.as_millis() as i64).saturating_mul(1 << attempts.clamp(0, 20)).min(MAX_BACKOFF_MS);
                    store::postpone_report(pool, &report.id, now + wait).await?;
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
