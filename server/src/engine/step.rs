//! One model step: the model streams its text and asks for tools; each
//! call is checked ([`plan`](super::plan)); the `get`s run at once, several
//! together; the step's first change is previewed and, if the host accepts
//! it, ends the turn as a pending action. Every outcome is delivered in the
//! calls' order.

use widget::wire::{Role, StopReason, TextDelta};

use super::context::{Stop, Turn};
use super::events::TurnEvent;
use super::metrics::StepClock;
use super::outcome::ToolOutcome;
use super::plan::{Plan, plan_step};
use super::prepare::Prepared;
use crate::db::{self, NewMessage};
use crate::llm::{ChatMessage, Finish};
use crate::usage::Metric;

/// How a step that did not stop the turn ended.
pub(super) enum StepEnd {
    /// The model answered without calling a tool: the turn is complete.
    Answered,
    /// Tool results went back to the model: another step follows.
    Continue,
}

impl Turn<'_> {
    /// Runs model step `iteration`; its own time (less the waits for the
    /// model and the host) is recorded however it ends.
    pub(super) async fn step(&self, prepared: &mut Prepared, iteration: u32) -> Result<StepEnd, Stop> {
        let mut clock = StepClock::start();
        let end = self.run_step(prepared, iteration, &mut clock).await;
        clock.record();
        end
    }

    async fn run_step(&self, prepared: &mut Prepared, iteration: u32, clock: &mut StepClock) -> Result<StepEnd, Stop> {
        let caller = &self.input.caller;
        let testing = self.input.test.is_some();
        let within = self.progress.lock().within_budget;
        if !within {
            self.engine.budgets.refused(&caller.workspace_id, "daily_tokens");
            return Err(Stop::Limit(StopReason::BudgetExhausted));
        }
        self.progress.start_step(iteration);
        let mut on_text = |delta: &str| {
            let delta = self.progress.push_text(delta);
            self.events.send(TurnEvent::Text(TextDelta { delta }));
        };
        let model = prepared.model.step(&prepared.messages, &prepared.tools, &mut on_text);
        let step = clock.waiting(Box::pin(model)).await.map_err(Stop::Model)?;
        tracing::debug!(iteration, duration_ms = clock.waited_ms(), "model step");
        let usage = &self.engine.budgets.usage;
        if testing {
            usage.count(&caller.workspace_id, Metric::TestTokens, step.tokens);
        } else {
            crate::metrics::tokens(&caller.workspace_id, step.input_tokens, step.output_tokens);
            usage.count(&caller.workspace_id, Metric::InputTokens, step.input_tokens);
            usage.count(&caller.workspace_id, Metric::OutputTokens, step.output_tokens);
            if step.finish == Some(Finish::ContentFilter) {
                Box::pin(self.spend(step.tokens)).await;
            } else if step.tool_calls.is_empty() {
                // The turn's last step: no later step reads the totals, so
                // its tokens are counted with its reply (`close`).
                self.progress.lock().unspent = step.tokens;
            }
            // A step that called tools counts its tokens with its message (below).
        }
        let tokens = self.progress.add_tokens(step.tokens);
        if step.finish == Some(Finish::ContentFilter) {
            return Err(Stop::Limit(StopReason::ContentFilter));
        }
        if step.tool_calls.is_empty() {
            return Ok(StepEnd::Answered);
        }

        let calls_json = serde_json::to_string(&step.tool_calls).expect("tool calls serialize");
        let asked = NewMessage::new(Role::Assistant, &step.text).with_tool_calls(calls_json);
        // Boxed, as the results' delivery below: a step's future holds room
        // for its largest await while the tools run (thousands of turns may
        // wait on a tool), and these writes are over before they start.
        let step_row =
            Box::pin(self.save_step(asked, if testing { 0 } else { step.tokens })).await.map_err(Stop::unsaved)?;
        self.progress.lock().step_text.clear();
        prepared.messages.push(ChatMessage::Assistant { text: step.text.clone(), tool_calls: step.tool_calls.clone() });

        let (plans, change) = plan_step(&step.tool_calls, &prepared.tools);
        for (call, _) in step.tool_calls.iter().zip(&plans).filter(|(_, plan)| matches!(plan, Plan::Answer(_))) {
            let verb = prepared.tools.iter().find(|t| t.name == call.name).map(|t| t.verb);
            crate::metrics::tool_call(verb, "refused");
        }
        let runs = step.tool_calls.iter().zip(&plans).map(|(call, plan)| self.run_planned(call, plan, prepared));
        let outcomes = clock.waiting(futures::future::join_all(runs)).await;
        for (call, outcome) in step.tool_calls.iter().zip(outcomes) {
            let Some(outcome) = outcome else { continue };
            let content = Box::pin(self.deliver_held(&call.id, outcome)).await;
            prepared.messages.push(ChatMessage::Tool { call_id: call.id.clone(), content });
        }

        if let Some(change) = change {
            let call = &step.tool_calls[change.index];
            match clock.waiting(Box::pin(self.propose(call, change.tool, &change.arguments, prepared))).await {
                Ok(()) => {
                    self.progress.lock().held_message_id = Some(step_row);
                    return Err(Stop::Limit(StopReason::PendingAction));
                }
                Err(content) => {
                    let content = Box::pin(self.deliver_held(&call.id, ToolOutcome::answer(content))).await;
                    prepared.messages.push(ChatMessage::Tool { call_id: call.id.clone(), content });
                }
            }
        }
        if tokens >= self.engine.limits.max_turn_tokens {
            return Err(Stop::Limit(StopReason::TokenLimit));
        }
        Ok(StepEnd::Continue)
    }

    /// Counts a step's tokens against the day's budgets on their own; the
    /// totals tell the next step whether it may run.
    async fn spend(&self, tokens: u64) {
        match self.engine.budgets.spend(&self.input.caller, tokens).await {
            Ok(within) => self.progress.lock().within_budget = within,
            Err(error) => tracing::error!(error = format!("{error:#}"), "cannot count the step's tokens"),
        }
    }

    /// Saves the results the turn holds and the message of a step that
    /// called tools, with its `tokens` counted against the budgets, in one
    /// write; the tokens alone first when that write fails. Returns the
    /// message's id.
    async fn save_step(&self, asked: NewMessage<'_>, tokens: u64) -> anyhow::Result<String> {
        let (pool, conversation_id) = (&self.engine.pool, &self.input.conversation_id);
        let held = std::mem::take(&mut self.progress.lock().held_results);
        let (day, counts) = self.engine.budgets.spending(&self.input.caller, tokens);
        if !counts.is_empty() {
            let spent = db::Spending { day, counts: &counts };
            match db::append_step_spending(pool, conversation_id, &held, asked.clone(), &spent).await {
                Ok((id, totals)) => {
                    self.progress.lock().within_budget = self.engine.budgets.within(&self.input.caller, &totals);
                    return Ok(id);
                }
                Err(error) => {
                    tracing::error!(error = format!("{error:#}"), "cannot save the step with its tokens");
                    self.spend(tokens).await;
                }
            }
        }
        let saved = db::append_held(pool, conversation_id, &held, Some(asked)).await?;
        Ok(saved.expect("a message was given"))
    }
}
