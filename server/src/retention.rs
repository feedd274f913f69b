//! The retention sweep: every `CA_RETENTION_SWEEP_MS` (default an hour),
//! conversations past their workspace's `retention_days` are deleted a
//! batch at a time, each in its own short transaction, never one with a
//! turn running (turns are never blocked for long), and its attachments
//! older than that, rows and bytes, and uploads never sent with a message
//! after a day; and, with
//! `CA_AUDIT_RETENTION_DAYS`, audit entries older than that; idempotency
//! keys of sends are forgotten after a day.

use std::time::Duration;

use crate::attachments::Attachments;
use crate::clock::Clock;
use crate::db::{self, Pool};

/// Conversations deleted per batch; a sweep runs batches until none is due.
const BATCH: i64 = 100;
/// An upload never sent with a message is deleted after a day.
const UNSENT_KEPT_MS: i64 = 24 * 3600 * 1000;

pub fn spawn(pool: Pool, clock: Clock, attachments: Attachments, every: Duration, audit_days: Option<u64>) {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            if let Err(error) = sweep(&pool, &clock, &attachments, audit_days).await {
                tracing::warn!(error = format!("{error:#}"), "retention sweep failed");
            }
        }
    });
}

/// One sweep at the clock's now.
pub async fn sweep(
    pool: &Pool,
    clock: &Clock,
    attachments: &Attachments,
    audit_days: Option<u64>,
) -> anyhow::Result<()> {
    loop {
        let erased = db::retention::sweep_conversations(pool, clock.now_ms(), BATCH).await?;
        if erased.conversations > 0 {
            tracing::info!(conversations = erased.conversations, messages = erased.messages, "retention: deleted");
        }
        if erased.conversations < BATCH as u64 {
            break;
        }
        // Let turns have the database between batches.
        tokio::task::yield_now().await;
    }
    loop {
        let old = db::retention::sweep_attachments(pool, clock.now_ms(), BATCH).await?;
        let unsent = db::retention::sweep_unsent_attachments(pool, clock.now_ms(), UNSENT_KEPT_MS, BATCH).await?;
        // The rows are gone: their bytes go now.
        for key in old.iter().chain(&unsent) {
            attachments.remove(key).await?;
        }
        if !old.is_empty() || !unsent.is_empty() {
            tracing::info!(attachments = old.len(), unsent = unsent.len(), "retention: deleted");
        }
        if old.len() < BATCH as usize && unsent.len() < BATCH as usize {
            break;
        }
    }
    let keys = db::idempotency::sweep(pool, clock.now_ms()).await?;
    if keys > 0 {
        tracing::debug!(keys, "retention: idempotency keys older than a day forgotten");
    }
    if let Some(days) = audit_days {
        let pruned = db::retention::sweep_audit(pool, clock.now_ms(), days as i64).await?;
        if pruned > 0 {
            tracing::info!(entries = pruned, "retention: audit entries deleted");
        }
    }
    Ok(())
}
