//! What each workspace used, per UTC day: turns, model tokens in and out,
//! calls to its tool server, and what each limit turned away. Counted in
//! memory as it happens and added to the database in one statement every
//! few seconds — before the usage is read, and when the server stops — so
//! a flood of refused requests costs no write each. Every replica adds its
//! own counts; the sums are the workspace's.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use crate::clock::Clock;
use crate::db::{self, Pool};

/// What is counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    /// A turn finished (however it ended).
    Turns,
    InputTokens,
    OutputTokens,
    /// A request to the workspace's tool server to run or preview a tool.
    ToolCalls,
    /// A turn of an assistant test run finished.
    TestTurns,
    /// Model tokens of an assistant test run.
    TestTokens,
    /// The named limit turned a request (or a turn) away.
    Refused(&'static str),
}

impl Metric {
    /// Its name in the database and the API (`refused:<limit>`).
    pub fn name(self) -> String {
        match self {
            Self::Turns => "turns".into(),
            Self::InputTokens => "input_tokens".into(),
            Self::OutputTokens => "output_tokens".into(),
            Self::ToolCalls => "tool_calls".into(),
            Self::TestTurns => "test_turns".into(),
            Self::TestTokens => "test_tokens".into(),
            Self::Refused(limit) => format!("{REFUSED}{limit}"),
        }
    }
}

/// The prefix of a refusal's metric.
pub const REFUSED: &str = "refused:";

const DAY_MS: i64 = 86_400_000;

/// Counts not yet in the database: (workspace, day, metric) → count.
type Pending = HashMap<(String, i64, String), i64>;

/// The counter (clones share it).
#[derive(Clone)]
pub struct Usage {
    pool: Pool,
    clock: Clock,
    pending: Arc<Mutex<Pending>>,
    /// One flush at a time, so a read that flushes first sees every count
    /// taken before it.
    flushing: Arc<tokio::sync::Mutex<()>>,
}

impl Usage {
    pub fn new(pool: Pool, clock: Clock) -> Self {
        Self { pool, clock, pending: Arc::default(), flushing: Arc::default() }
    }

    /// The UTC day (days since 1970-01-01) it is now, by the server's clock.
    pub fn today(&self) -> i64 {
        self.clock.now_ms().div_euclid(DAY_MS)
    }

    /// Counts `n` of `metric` for the workspace today. Workspaces come only
    /// from verified credentials, so the keys are bounded by the workspaces
    /// that exist.
    pub fn count(&self, workspace_id: &str, metric: Metric, n: u64) {
        if n == 0 {
            return;
        }
        let key = (workspace_id.to_owned(), self.today(), metric.name());
        let mut pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
        let count = pending.entry(key).or_default();
        *count = count.saturating_add(i64::try_from(n).unwrap_or(i64::MAX));
    }

    /// Adds what was counted to the database; on failure the counts are
    /// kept for the next try.
    pub async fn flush(&self) -> anyhow::Result<()> {
        let _one = self.flushing.lock().await;
        let taken = std::mem::take(&mut *self.pending.lock().unwrap_or_else(PoisonError::into_inner));
        if taken.is_empty() {
            return Ok(());
        }
        let rows: Vec<db::usage::Row> = taken.iter().map(|((w, d, m), n)| (w.clone(), *d, m.clone(), *n)).collect();
        if let Err(error) = db::usage::add(&self.pool, &rows).await {
            let mut pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
            for (key, n) in taken {
                let count = pending.entry(key).or_default();
                *count = count.saturating_add(n);
            }
            return Err(error);
        }
        Ok(())
    }

    /// The workspace's sums from day `first` to `last` (included), this
    /// replica's latest counts with them: (day, metric, count).
    pub async fn days(&self, workspace_id: &str, first: i64, last: i64) -> anyhow::Result<Vec<(i64, String, i64)>> {
        if let Err(error) = self.flush().await {
            tracing::warn!(error = format!("{error:#}"), "usage: cannot add the latest counts before reading");
        }
        db::usage::days(&self.pool, workspace_id, first, last).await
    }

    /// Forgets the sums of days more than 400 days ago.
    pub async fn forget_old(&self) -> anyhow::Result<()> {
        db::usage::forget_before(&self.pool, self.today() - KEPT_DAYS).await
    }
}

/// Days of usage kept.
pub const KEPT_DAYS: i64 = 400;

/// Adds the counts to the database every `every`.
pub fn spawn_flushing(usage: Usage, every: Duration) {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            if let Err(error) = usage.flush().await {
                tracing::warn!(
                    error = format!("{error:#}"),
                    "usage: cannot add the counts; they wait for the next try"
                );
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_is_named_after_its_limit() {
        assert_eq!(Metric::Refused("turns_per_user").name(), "refused:turns_per_user");
        assert_eq!(Metric::ToolCalls.name(), "tool_calls");
    }
}
