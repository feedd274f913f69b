//! The turn's last phase: the reply is saved (with a notice when a limit
//! or the stop button cut it short), apps whose tool never answered are
//! cancelled, the finished message is sent, the turn's end is recorded,
//! subscribers hear of it, and `done` goes last.

use widget::wire::{FinishedMessage, Role, StopReason, TurnDone};

use super::context::Turn;
use super::events::TurnEvent;
use super::progress::Progress;
use super::service::TurnStart;
use crate::db::{self, NewMessage};

impl Turn<'_> {
    pub(super) async fn close(&self, reason: StopReason) {
        let engine = self.engine;
        let Progress {
            mut text,
            mut step_text,
            iterations,
            tokens,
            held_message_id,
            running_apps,
            retrieved,
            unspent,
            held_results,
            ..
        } = std::mem::take(&mut *self.progress.lock());
        // Citations of what this turn's searches returned become numbered
        // sources; any other is dropped before anything is kept or shown.
        let sources = retrieved.resolve(&mut [&mut text, &mut step_text]);
        let testing = self.input.test.is_some();
        if retrieved.searched && sources.is_empty() && reason == StopReason::Completed && !testing {
            self.record_gap(if retrieved.found { "not_cited" } else { "no_results" }).await;
        }
        for component_id in &running_apps {
            if let Err(error) = db::apps::cancel(&engine.pool, component_id, cancel_reason(reason)).await {
                tracing::error!(error = format!("{error:#}"), "cannot record an app's cancelled tool");
            }
        }
        if let Some(notice) = limit_notice(reason).map(|key| widget::wire::i18n::text(self.input.lang, key)) {
            for t in [&mut text, &mut step_text] {
                if !t.is_empty() {
                    t.push_str("\n\n");
                }
                t.push_str(&format!("_{notice}_"));
            }
        }
        // The held tool results, the reply, its step's tokens and the
        // turn's end are written together where there is a reply to save;
        // each alone otherwise, or when that write fails.
        let (day, counts) = engine.budgets.spending(&self.input.caller, unspent);
        let spent = db::Spending { day, counts: &counts };
        let end = db::TurnEnd { turn_id: &self.input.turn_id, stop_reason: reason, iterations, tokens };
        let mut together = false;
        let message_id = match held_message_id {
            Some(id) => Some(id),
            None if !step_text.is_empty() => {
                let reply = NewMessage::new(Role::Assistant, &step_text).with_sources(&sources);
                let conversation_id = &self.input.conversation_id;
                match db::finish_turn_with_reply(&engine.pool, conversation_id, &held_results, reply, &end, &spent)
                    .await
                {
                    Ok(id) => {
                        together = true;
                        Some(id)
                    }
                    Err(error) => {
                        tracing::error!(error = format!("{error:#}"), "cannot save the reply");
                        None
                    }
                }
            }
            None => None,
        };
        if !together {
            if let Err(error) = db::append_held(&engine.pool, &self.input.conversation_id, &held_results, None).await {
                tracing::error!(error = format!("{error:#}"), "cannot save the turn's tool results");
            }
            if !counts.is_empty()
                && let Err(error) = db::limits::add_tokens(&engine.pool, &counts, day).await
            {
                tracing::error!(error = format!("{error:#}"), "cannot count the step's tokens");
            }
            if let Err(error) = db::finish_turn(&engine.pool, &self.input.turn_id, reason, iterations, tokens).await {
                tracing::error!(error = format!("{error:#}"), "cannot record the end of the turn");
            }
        }
        if let Some(message_id) = message_id
            && !text.is_empty()
        {
            let html =
                crate::markdown::render(&text) + &crate::knowledge::cite::sources_html(&sources, self.input.lang);
            self.events.send(TurnEvent::Message(FinishedMessage { message_id, html, text }));
        }
        tracing::info!(stop_reason = reason.as_str(), iterations, tokens, "turn finished");
        if testing {
            engine.budgets.usage.count(&self.input.caller.workspace_id, crate::usage::Metric::TestTurns, 1);
        } else {
            engine.budgets.turn_finished(&self.input.caller.workspace_id, reason);
            if let Some(hook) = &engine.on_turn_finished {
                hook.turn_finished(&self.input.caller.workspace_id).await;
            }
        }
        self.events.send(TurnEvent::Done(TurnDone { stop_reason: reason, sources }));
    }

    /// Records the visitor's question as a content gap (redacted), when the
    /// turn began with one.
    async fn record_gap(&self, reason: &str) {
        let (TurnStart::Message(message) | TurnStart::FirstMessage(message)) = &self.input.start else { return };
        let question = crate::knowledge::gaps::redact(&message.text);
        if question.trim().is_empty() {
            return;
        }
        let caller = &self.input.caller;
        let gap = crate::db::knowledge::NewGap {
            workspace_id: &caller.workspace_id,
            conversation_id: &self.input.conversation_id,
            external_user_id: &caller.external_user_id,
            question: &question,
            reason,
            language: self.input.lang,
        };
        match crate::db::knowledge::insert_gap(&self.engine.pool, gap, self.engine.clock.now_ms()).await {
            Ok(()) => tracing::info!(reason, "content gap recorded"),
            Err(error) => tracing::error!(error = format!("{error:#}"), "cannot record a content gap"),
        }
    }
}

/// What an MCP App is told when the turn ended before its tool answered
/// (`ui/notifications/tool-cancelled`'s reason; for the app, in English).
fn cancel_reason(reason: StopReason) -> &'static str {
    match reason {
        StopReason::Cancelled => "The user stopped the reply.",
        StopReason::TimeLimit => "The reply ran out of time.",
        StopReason::Interrupted => "The assistant was interrupted.",
        _ => "The reply ended before the tool answered.",
    }
}

/// What the reply says when a limit or the user cut it short: its key in
/// the catalogues (`widget::wire::i18n::SERVER_KEYS`), written in the
/// user's language.
fn limit_notice(reason: StopReason) -> Option<&'static str> {
    match reason {
        StopReason::IterationLimit => Some("notice_iterations"),
        StopReason::TimeLimit => Some("notice_time"),
        StopReason::TokenLimit => Some("notice_tokens"),
        StopReason::Cancelled => Some("notice_stopped"),
        StopReason::ContentFilter => Some("notice_filtered"),
        StopReason::BudgetExhausted => Some("notice_budget"),
        StopReason::Completed
        | StopReason::PendingAction
        | StopReason::ModelUnavailable
        | StopReason::Interrupted
        | StopReason::Error => None,
    }
}
