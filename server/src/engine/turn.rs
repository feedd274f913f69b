//! A turn from top to bottom: open → prepare → model steps → close, within
//! the turn's time limit and its stop button. Every phase is a method of
//! [`Turn`], the one context a turn's phases share (`context.rs`).

use tokio_util::sync::CancellationToken;
use tracing::Instrument;
use widget::wire::i18n;
use widget::wire::{StopReason, TurnDone, TurnError, TurnStarted};

use super::context::{Stop, Turn};
use super::events::{EventSink, TurnEvent};
use super::progress::SharedProgress;
use super::service::{Engine, TurnInput};
use super::step::StepEnd;
use crate::db::actions::ActionRow;

impl Engine {
    /// Runs a turn to its end, sending events to `events` and saving the
    /// transcript. Never panics on bad input from the host or the model.
    /// Every log line of the turn carries its ids.
    pub async fn run_turn(&self, input: TurnInput, events: EventSink, cancel: CancellationToken) {
        let span = tracing::info_span!("turn", turn_id = %input.turn_id, conversation_id = %input.conversation_id,
            workspace_id = %input.caller.workspace_id);
        let progress = SharedProgress::default();
        progress.lock().within_budget = input.within_budget;
        let turn = Turn { engine: self, input: &input, events: &events, progress };
        turn.run(cancel).instrument(span).await;
    }
}

impl Turn<'_> {
    async fn run(&self, cancel: CancellationToken) {
        self.events.send(TurnEvent::Turn(TurnStarted {
            turn_id: self.input.turn_id.clone(),
            conversation_id: self.input.conversation_id.clone(),
        }));
        // Boxed, as the other phases' rare or large parts are: a future holds
        // room for its largest phase while any runs, and a turn waiting on a
        // tool (thousands may) should hold only what waiting needs.
        let stale = match Box::pin(self.open()).await {
            Ok(stale) => stale,
            Err(error) => {
                tracing::error!(error = format!("{error:#}"), "cannot start the turn");
                self.events.send(TurnEvent::Error(TurnError {
                    message: i18n::text(self.input.lang, "error_start"),
                    code: "turn_failed".into(),
                }));
                self.events.send(TurnEvent::Done(TurnDone { stop_reason: StopReason::Error, sources: Vec::new() }));
                return;
            }
        };
        let outcome = tokio::select! {
            result = tokio::time::timeout(self.engine.limits.turn_timeout, self.steps(stale.as_ref())) => {
                result.unwrap_or(Err(Stop::Limit(StopReason::TimeLimit)))
            }
            () = cancel.cancelled() => Err(Stop::Limit(StopReason::Cancelled)),
        };
        let reason = match outcome {
            Ok(()) => StopReason::Completed,
            Err(Stop::Limit(reason)) => reason,
            Err(Stop::Failed(key)) => {
                let message = i18n::text(self.input.lang, key);
                self.events.send(TurnEvent::Error(TurnError { message, code: "turn_failed".into() }));
                StopReason::Error
            }
            Err(Stop::Model(error)) => {
                tracing::warn!(%error, "model step failed");
                let (message, code) = (error.told_in(self.input.lang), error.code().into());
                self.events.send(TurnEvent::Error(TurnError { message, code }));
                if error.is_retryable() { StopReason::ModelUnavailable } else { StopReason::Error }
            }
        };
        // Boxed too: the turn waits on its steps with room for this write.
        Box::pin(self.close(reason)).await;
    }

    /// The host's tools and context (and a fresh preview of a `stale`
    /// Apply), then model steps until the model answers without calling a
    /// tool or a limit is hit.
    async fn steps(&self, stale: Option<&ActionRow>) -> Result<(), Stop> {
        let mut prepared = Box::pin(self.prepare()).await?;
        if let Some(stale) = stale {
            Box::pin(self.reoffer(stale, &mut prepared)).await?;
        }
        for iteration in 1..=self.engine.limits.max_iterations {
            if let StepEnd::Answered = self.step(&mut prepared, iteration).await? {
                return Ok(());
            }
        }
        Err(Stop::Limit(StopReason::IterationLimit))
    }
}
