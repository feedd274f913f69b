//! What a turn has said so far, kept outside the loop so that a turn cut
//! short by time or a stop request still saves what the user saw.

use std::sync::{Mutex, MutexGuard, PoisonError};

use crate::display::TurnCards;

#[derive(Default)]
pub(super) struct Progress {
    /// All the turn's text, as streamed.
    pub text: String,
    /// The text of the current model step.
    pub step_text: String,
    /// The cards shown so far (each link once, at most the turn's share).
    pub cards: TurnCards,
    pub iterations: u32,
    pub tokens: u64,
    /// The saved row that already holds the step's text (a pending action's).
    pub held_message_id: Option<String>,
    /// Whether today's token budgets have room: as read when the turn was
    /// admitted, then as the totals of each step's spending returned.
    pub within_budget: bool,
    /// The tokens of the turn's last step, not yet counted against the
    /// budgets: no later step reads their totals, so they are counted with
    /// the reply and the turn's end (`close`).
    pub unspent: u64,
    /// MCP Apps shown while their tool runs (component ids): those still
    /// here when the turn ends are told their tool was cancelled.
    pub running_apps: Vec<String>,
    /// Tool results shown but not saved yet: they go with the turn's next
    /// write (`Turn::deliver_held`).
    pub held_results: Vec<crate::db::HeldResult>,
    /// What this turn's knowledge searches returned, by the ids the model cites.
    pub retrieved: crate::knowledge::cite::Retrieved,
}

/// Shared between the loop, its text callback and the closing phase.
#[derive(Default)]
pub(super) struct SharedProgress(Mutex<Progress>);

impl SharedProgress {
    pub fn lock(&self) -> MutexGuard<'_, Progress> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Starts model step `iteration`.
    pub fn start_step(&self, iteration: u32) {
        let mut p = self.lock();
        p.iterations = iteration;
        p.step_text.clear();
    }

    /// Adds a streamed delta; text of a later step is a new paragraph of
    /// the same reply. Returns the delta as the user sees it.
    pub fn push_text(&self, delta: &str) -> String {
        let mut p = self.lock();
        let delta =
            if p.step_text.is_empty() && !p.text.is_empty() { format!("\n\n{delta}") } else { delta.to_owned() };
        p.step_text.push_str(delta.trim_start_matches('\n'));
        p.text.push_str(&delta);
        delta
    }

    /// Counts a step's tokens; returns the turn's total.
    pub fn add_tokens(&self, tokens: u64) -> u64 {
        let mut p = self.lock();
        p.tokens += tokens;
        p.tokens
    }
}
