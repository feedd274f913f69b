//! Status reporting, tool → hub (caddie-tool-contract-ct1.md §5): after a
//! client-visible change the newest state is pushed at once — awaited by
//! the change, with a short timeout — with the assignment's next `seq`;
//! older reports still queued are superseded (they say nothing the newest
//! does not). A report the hub could not take is queued, one per
//! assignment, and retried with backoff until it answers 2xx; one it
//! refuses for good (a 4xx: an assignment it deleted, say) is dropped with
//! a log line and a metric, never retried forever. `seq` is monotonic per
//! assignment, so the hub can ignore a stale report whatever order they
//! arrive in.

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
    let assignment_id = link.assignment_id.as_str();
    let fields = hub_api::status_fields(&store::space_activity(pool, workspace_id).await?);
    let seq = store::next_status_seq(pool, assignment_id, &fields.to_string()).await?;
    let body = hub_api::status_report(assignment_id, &fields, seq).to_string();
    for _ in 0..store::supersede_reports(pool, assignment_id, seq).await? {
        crate::metrics::caddie_report("superseded");
    }
    match tokio::time::timeout(FIRST_PUSH_TIMEOUT, push(caddie, &body)).await {
        Ok(Ok(())) => {
            crate::metrics::caddie_report("pushed");
            return Ok(());
        }
        Ok(Err(PushError::Refused(status))) => {
            dropped(assignment_id, status);
            return Ok(());
        }
        Ok(Err(PushError::Failed(e))) => tracing::info!(error = format!("{e:#}"), "caddie: status push failed; queued"),
        Err(_) => tracing::info!("caddie: status push timed out; queued"),
    }
    store::queue_report(pool, assignment_id, seq, &body).await?;
    crate::metrics::caddie_report("queued");
    Ok(())
}

/// Why a push did not go through.
enum PushError {
    /// The hub refused it for good: a 4xx other than 408, 425 and 429.
    Refused(reqwest::StatusCode),
    /// The hub could not be reached, failed or asked to come back later.
    Failed(anyhow::Error),
}

/// `POST {hub}/api/tool/report`, signed.
async fn push(caddie: &Caddie, body: &str) -> Result<(), PushError> {
    let url = caddie.config.hub_origin.join("/api/tool/report").map_err(|e| PushError::Failed(e.into()))?;
    let request = caddie.hub.post(url).header("content-type", "application/json").body(body.to_owned());
    let response = caddie.signed(request, body.as_bytes()).send().await.map_err(|e| PushError::Failed(e.into()))?;
    let status = response.status();
    if status.is_success() {
        Ok(())
    } else if status.is_client_error() && !matches!(status.as_u16(), 408 | 425 | 429) {
        Err(PushError::Refused(status))
    } else {
        Err(PushError::Failed(anyhow::anyhow!("the hub answered {status}")))
    }
}

/// A report the hub refused for good: logged, counted, not retried (the
/// reconcile still tells the hub the state when it asks).
fn dropped(assignment_id: &str, status: reqwest::StatusCode) {
    crate::metrics::caddie_report("dropped");
    tracing::warn!(
        assignment_id,
        status = status.as_u16(),
        "caddie: the hub refused a status report for good; dropped"
    );
}

/// Delivers queued reports: per assignment its newest, once due (older
/// ones are superseded). The wait after a failure doubles from `base` up
/// to ten minutes.
pub async fn deliver_due(caddie: &Caddie, pool: &Pool, base: Duration) -> anyhow::Result<usize> {
    let now = now_ms();
    let mut delivered = 0;
    for assignment_id in store::assignments_with_reports(pool).await? {
        let queued = store::queued_reports(pool, &assignment_id).await?;
        let Some(report) = queued.last() else { continue };
        for _ in 0..store::supersede_reports(pool, &assignment_id, report.seq).await? {
            crate::metrics::caddie_report("superseded");
        }
        if report.next_at > now {
            continue;
        }
        match push(caddie, &report.body).await {
            Ok(()) => {
                store::delete_report(pool, &report.id).await?;
                crate::metrics::caddie_report("retried");
                delivered += 1;
            }
            Err(PushError::Refused(status)) => {
                store::delete_report(pool, &report.id).await?;
                dropped(&assignment_id, status);
            }
            Err(PushError::Failed(e)) => {
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
