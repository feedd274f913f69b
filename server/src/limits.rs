//! Limits that hold across replicas (their counts live in the database):
//! turns per end user, per client address and per workspace in a minute,
//! a component's direct tool calls per user, model tokens per workspace
//! (and optionally per user) per day, attachments' bytes per user and per
//! workspace per day, and at most so many turns running in this process at
//! once.

use std::net::IpAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use crate::auth::Caller;
use crate::clock::Clock;
use crate::config::RateLimits;
use crate::db::{self, Pool};
use crate::usage::{Metric, Usage};
use widget::wire::StopReason;

/// Why a request was not admitted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// A window's count is used up: try again after `retry_after`.
    TooMany { limit: &'static str, retry_after: Duration },
}

/// The limits, with their counts in the database, and what each
/// workspace used (refusals included).
#[derive(Clone)]
pub struct Limits {
    pool: Pool,
    clock: Clock,
    pub config: RateLimits,
    pub usage: Usage,
}

const MINUTE_MS: i64 = 60_000;
const DAY_MS: i64 = 86_400_000;

impl Limits {
    pub fn new(pool: Pool, clock: Clock, config: RateLimits) -> Self {
        let usage = Usage::new(pool.clone(), clock.clone());
        Self { pool, clock, config, usage }
    }

    /// Counts a new turn of `caller` from `ip` against the per-user, per
    /// address and per-workspace minute; refused when any is used up.
    /// Admitted, whether the caller may still spend model tokens today
    /// (UTC), read in the same call (issue #47: a turn's admission is one
    /// round trip to the database; its first step need not read them).
    pub async fn admit_turn(&self, caller: &Caller, ip: IpAddr) -> anyhow::Result<Result<bool, Refusal>> {
        let c = &self.config.for_workspace(&caller.limits);
        let windows = [
            (
                "turns_per_user",
                format!("turn:user:{}:{}", caller.workspace_id, caller.external_user_id),
                c.turns_per_user,
            ),
            ("turns_per_ip", format!("turn:ip:{ip}"), c.turns_per_ip),
            ("turns_per_workspace", format!("turn:ws:{}", caller.workspace_id), c.turns_per_workspace),
        ];
        let (now, start) = self.window(MINUTE_MS);
        let keys: Vec<String> = windows.iter().map(|(_, key, _)| key.clone()).collect();
        let budgets = self.budgets(caller);
        let budget_keys: Vec<String> = budgets.iter().map(|(key, _)| key.clone()).collect();
        let day = now.div_euclid(DAY_MS);
        let (counts, used) = db::limits::hit_all_reading_tokens(&self.pool, &keys, start, &budget_keys, day).await?;
        for (limit, key, allowed) in &windows {
            let count = counts.iter().find(|(k, _)| k == key).map_or(0, |(_, n)| *n);
            if u64::try_from(count).unwrap_or(u64::MAX) > *allowed {
                return Ok(Err(self.refuse(limit, Some(&caller.workspace_id), now, start + MINUTE_MS)));
            }
        }
        Ok(Ok(Self::all_within(&budgets, &used)))
    }

    /// Now, and the start of the window of `window_ms` it falls in.
    fn window(&self, window_ms: i64) -> (i64, i64) {
        let now = self.clock.now_ms();
        (now, now - now.rem_euclid(window_ms))
    }

    fn refuse(&self, limit: &'static str, workspace_id: Option<&str>, now: i64, window_end: i64) -> Refusal {
        match workspace_id {
            Some(workspace_id) => self.refused(workspace_id, limit),
            None => crate::metrics::limit_refused(limit),
        }
        let retry_after = Duration::from_millis(u64::try_from(window_end - now).unwrap_or(0).max(1000));
        Refusal::TooMany { limit, retry_after }
    }

    /// Counts a component's direct tool call of `caller` (20 per 10 s by default).
    pub async fn admit_component_call(&self, caller: &Caller) -> anyhow::Result<Result<(), Refusal>> {
        let key = format!("call:user:{}:{}", caller.workspace_id, caller.external_user_id);
        let allowed = self.config.for_workspace(&caller.limits).component_calls;
        self.count("component_calls", Some(&caller.workspace_id), &key, allowed, 10_000).await
    }

    /// Counts a request of a conversation's MCP Apps (60 per 10 s).
    pub async fn admit_app_request(
        &self,
        caller: &Caller,
        conversation_id: &str,
    ) -> anyhow::Result<Result<(), Refusal>> {
        let key = format!("app:conversation:{}:{conversation_id}", caller.workspace_id);
        self.count("app_requests", Some(&caller.workspace_id), &key, 60, 10_000).await
    }

    /// Counts a message a conversation's MCP Apps write for the visitor
    /// (`ui/message`, 5 per minute).
    pub async fn admit_app_message(
        &self,
        caller: &Caller,
        conversation_id: &str,
    ) -> anyhow::Result<Result<(), Refusal>> {
        let key = format!("app-message:conversation:{}:{conversation_id}", caller.workspace_id);
        self.count("app_messages", Some(&caller.workspace_id), &key, 5, MINUTE_MS).await
    }

    /// Counts a console sign-in attempt from `ip` (`CA_CONSOLE_SIGN_INS_PER_MINUTE`).
    pub async fn admit_sign_in(&self, ip: IpAddr) -> anyhow::Result<Result<(), Refusal>> {
        let allowed = self.config.console_sign_ins;
        self.count("console_sign_ins", None, &format!("console:ip:{ip}"), allowed, MINUTE_MS).await
    }

    async fn count(
        &self,
        limit: &'static str,
        workspace_id: Option<&str>,
        key: &str,
        allowed: u64,
        window_ms: i64,
    ) -> anyhow::Result<Result<(), Refusal>> {
        let (now, start) = self.window(window_ms);
        let count = db::limits::hit(&self.pool, key, start).await?;
        if u64::try_from(count).unwrap_or(u64::MAX) <= allowed {
            return Ok(Ok(()));
        }
        Ok(Err(self.refuse(limit, workspace_id, now, start + window_ms)))
    }

    /// `limit` turned away a request (or cut a turn short) of the
    /// workspace: counted in the metrics and in its usage.
    pub fn refused(&self, workspace_id: &str, limit: &'static str) {
        crate::metrics::limit_refused(limit);
        self.usage.count(workspace_id, Metric::Refused(limit), 1);
    }

    /// A turn of the workspace ended with `reason` (a limit that cut it
    /// short is a refusal too).
    pub fn turn_finished(&self, workspace_id: &str, reason: StopReason) {
        crate::metrics::turn_finished(reason);
        self.usage.count(workspace_id, Metric::Turns, 1);
        if let Some(limit) = crate::metrics::limit_of(reason) {
            self.refused(workspace_id, limit);
        }
    }

    /// Counts a step's tokens against today's budgets (one statement);
    /// true while they still have room (the totals include every replica's
    /// spending so far, so the next step need not read them again).
    pub async fn spend(&self, caller: &Caller, tokens: u64) -> anyhow::Result<bool> {
        let day = self.clock.now_ms().div_euclid(DAY_MS);
        let budgets = self.budgets(caller);
        if budgets.is_empty() {
            return Ok(true);
        }
        let tokens = i64::try_from(tokens)?;
        let spent: Vec<(String, i64)> = budgets.iter().map(|(key, _)| (key.clone(), tokens)).collect();
        let totals = db::limits::add_tokens(&self.pool, &spent, day).await?;
        Ok(Self::all_within(&budgets, &totals))
    }

    /// What [`Budgets::spend`] would add for `tokens` of `caller`'s, for a
    /// write that carries it with others: the day (UTC) and each budget's
    /// key with the tokens — none when no budget applies or nothing was
    /// spent.
    pub fn spending(&self, caller: &Caller, tokens: u64) -> (i64, Vec<(String, i64)>) {
        let day = self.clock.now_ms().div_euclid(DAY_MS);
        let tokens = i64::try_from(tokens).unwrap_or(i64::MAX);
        if tokens == 0 {
            return (day, Vec::new());
        }
        (day, self.budgets(caller).into_iter().map(|(key, _)| (key, tokens)).collect())
    }

    /// True while `totals` (each budget's for the day, as a count of
    /// [`Budgets::spending`] returned them) leave `caller`'s budgets room.
    pub fn within(&self, caller: &Caller, totals: &[(String, i64)]) -> bool {
        Self::all_within(&self.budgets(caller), totals)
    }

    /// True when every budget's total (absent: nothing used) is below it.
    fn all_within(budgets: &[(String, u64)], totals: &[(String, i64)]) -> bool {
        budgets.iter().all(|(key, budget)| {
            let used = totals.iter().find(|(k, _)| k == key).map_or(0, |(_, n)| *n);
            u64::try_from(used).unwrap_or(0) < *budget
        })
    }

    /// The budgets that apply (a budget of 0 is none), with their keys.
    fn budgets(&self, caller: &Caller) -> Vec<(String, u64)> {
        self.budget_keys(caller).into_iter().filter(|(_, budget)| *budget > 0).collect()
    }

    fn budget_keys(&self, caller: &Caller) -> [(String, u64); 2] {
        let c = self.config.for_workspace(&caller.limits);
        [
            (format!("tokens:ws:{}", caller.workspace_id), c.workspace_daily_tokens),
            (format!("tokens:user:{}:{}", caller.workspace_id, caller.external_user_id), c.user_daily_tokens),
        ]
    }

    /// Counts an attachment's `bytes` against today's (UTC) quotas of its
    /// user and of the workspace, in one statement on whichever replica;
    /// refused — and not counted — when either would go over, until the
    /// day ends.
    pub async fn admit_attachment(&self, caller: &Caller, bytes: u64) -> anyhow::Result<Result<(), Refusal>> {
        let now = self.clock.now_ms();
        let day = now.div_euclid(DAY_MS);
        let quotas: Vec<(String, u64)> = [
            (format!("attachments:ws:{}", caller.workspace_id), self.config.workspace_daily_attachment_bytes),
            (
                format!("attachments:user:{}:{}", caller.workspace_id, caller.external_user_id),
                self.config.user_daily_attachment_bytes,
            ),
        ]
        .into_iter()
        .filter(|(_, quota)| *quota > 0)
        .collect();
        if quotas.is_empty() {
            return Ok(Ok(()));
        }
        let bytes = i64::try_from(bytes)?;
        let added: Vec<(String, i64)> = quotas.iter().map(|(key, _)| (key.clone(), bytes)).collect();
        let totals = db::limits::add_tokens(&self.pool, &added, day).await?;
        let over = quotas.iter().any(|(key, quota)| {
            totals.iter().any(|(k, total)| k == key && u64::try_from(*total).unwrap_or(0) > *quota)
        });
        if !over {
            return Ok(Ok(()));
        }
        let back: Vec<(String, i64)> = quotas.iter().map(|(key, _)| (key.clone(), -bytes)).collect();
        db::limits::add_tokens(&self.pool, &back, day).await?;
        let retry_after = Duration::from_millis(u64::try_from((day + 1) * DAY_MS - now).unwrap_or(1000));
        Ok(Err(Refusal::TooMany { limit: "attachment_bytes", retry_after }))
    }

    /// Forgets counts older than a day (any replica may do it).
    pub async fn forget_old(&self) -> anyhow::Result<()> {
        let now = self.clock.now_ms();
        db::limits::forget_old(&self.pool, now - DAY_MS, now.div_euclid(DAY_MS) - 2).await?;
        self.usage.forget_old().await
    }
}

/// Turn streams open in this process, the turns' own and resumed ones
/// (`CA_MAX_OPEN_STREAMS`). A turn's own stream is always counted (the cap
/// on running turns bounds those); a resumed one is refused beyond the cap.
#[derive(Clone)]
pub struct OpenStreams {
    open: Arc<AtomicUsize>,
    cap: usize,
}

/// One open stream, counted until dropped.
pub struct StreamSlot {
    open: Arc<AtomicUsize>,
    _gauge: crate::metrics::OpenStream,
}

impl OpenStreams {
    pub fn new(cap: usize) -> Self {
        Self { open: Arc::default(), cap }
    }

    /// A turn's own stream.
    pub fn open(&self) -> StreamSlot {
        self.open.fetch_add(1, Ordering::SeqCst);
        self.slot()
    }

    /// A resumed stream, unless `cap` are open.
    pub fn try_open(&self) -> Option<StreamSlot> {
        let cap = self.cap;
        self.open.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| (n < cap).then_some(n + 1)).ok()?;
        Some(self.slot())
    }

    fn slot(&self) -> StreamSlot {
        StreamSlot { open: self.open.clone(), _gauge: crate::metrics::OpenStream::open() }
    }
}

impl Drop for StreamSlot {
    fn drop(&mut self) {
        self.open.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Turns running in this process (`CA_MAX_CONCURRENT_TURNS`): a turn takes
/// its slot when it is admitted, before anything is written, so that a
/// burst of requests cannot all pass the check while the first ones are
/// still on their way to running.
#[derive(Clone)]
pub struct TurnSlots {
    taken: Arc<AtomicUsize>,
    cap: usize,
}

/// One admitted turn's place, given back when dropped (its turn ended, or
/// it did not start after all).
pub struct TurnSlot {
    taken: Arc<AtomicUsize>,
}

impl TurnSlots {
    pub fn new(cap: usize) -> Self {
        Self { taken: Arc::default(), cap }
    }

    /// A place for one more turn, unless `cap` are taken.
    pub fn try_take(&self) -> Option<TurnSlot> {
        let cap = self.cap;
        self.taken.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| (n < cap).then_some(n + 1)).ok()?;
        Some(TurnSlot { taken: self.taken.clone() })
    }
}

impl Drop for TurnSlot {
    fn drop(&mut self) {
        self.taken.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Every hour, any replica forgets counts that no longer matter.
pub fn spawn_cleanup(limits: Limits) {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(Duration::from_secs(3600));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            if let Err(error) = limits.forget_old().await {
                tracing::warn!(error = format!("{error:#}"), "limits: cleanup failed");
            }
        }
    });
}
