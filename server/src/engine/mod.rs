//! The turn engine: one user message in, a streamed, persisted answer out.
//! Per turn it fetches the host's tools and context once, then loops —
//! model step, tools — within the iteration, time and token limits.
//! `get` tools run by themselves; other verbs are not run without the
//! user's confirmation (remote-tools-contract.md, "Verb semantics").

pub mod events;
pub mod prompt;
pub mod turns;

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use widget::wire::{
    DisplayCard, DisplayCards, FinishedMessage, TextDelta, ToolActivity, TurnDone, TurnError, TurnStarted,
};

use crate::auth::Caller;
use crate::config::TurnLimits;
use crate::crypto::Vault;
use crate::db::{self, NewMessage, Pool};
use crate::display::{TurnCards, cards_from_output};
use crate::host::{ExecutionScope, HostClient, HostTarget, ToolSpec, Verb};
use crate::llm::{ChatMessage, Model, ToolCall};
use events::{EventSink, StopReason, TurnEvent};

/// Characters of one tool result handed to the model, at most.
pub const MAX_TOOL_RESULT_CHARS: usize = 16_000;

/// What a turn needs; shared by all turns.
#[derive(Clone)]
pub struct Engine {
    pub pool: Pool,
    pub vault: Vault,
    pub host: HostClient,
    pub model: Model,
    pub limits: TurnLimits,
}

/// One turn to run.
#[derive(Clone, Debug)]
pub struct TurnInput {
    pub caller: Caller,
    pub conversation_id: String,
    pub turn_id: String,
    pub message: String,
}

/// How the loop ended early.
enum Stop {
    Limit(StopReason),
    /// A failure the user is told about in general terms.
    Failed(&'static str),
}

/// What has been said so far, kept outside the loop so that a turn cut
/// short by time or a stop request still saves what the user saw.
#[derive(Default)]
struct Progress {
    text: String,
    cards: Vec<DisplayCard>,
    iterations: u32,
    tokens: u64,
}

impl Engine {
    /// Runs a turn to its end, sending events to `events` and saving the
    /// transcript. Never panics on bad input from the host or the model.
    pub async fn run_turn(&self, input: TurnInput, events: EventSink, cancel: CancellationToken) {
        let span = tracing::info_span!("turn", turn_id = %input.turn_id, conversation_id = %input.conversation_id,
            workspace_id = %input.caller.workspace_id);
        let _guard = span.enter();
        events.send(TurnEvent::Turn(TurnStarted {
            turn_id: input.turn_id.clone(),
            conversation_id: input.conversation_id.clone(),
        }));
        let progress = Arc::new(Mutex::new(Progress::default()));
        let started = async {
            db::start_turn(&self.pool, &input.turn_id, &input.conversation_id).await?;
            db::append_message(
                &self.pool,
                &input.conversation_id,
                NewMessage { role: "user", content: &input.message, ..Default::default() },
            )
            .await
        };
        if let Err(error) = started.await {
            tracing::error!(error = format!("{error:#}"), "cannot save the user's message");
            return self.fail(&events, "Your message could not be saved. Please try again.").await;
        }

        let outcome = tokio::select! {
            result = tokio::time::timeout(self.limits.turn_timeout, self.turn_loop(&input, &events, &progress)) => {
                match result {
                    Ok(Ok(())) => Ok(StopReason::Completed),
                    Ok(Err(stop)) => Err(stop),
                    Err(_) => Err(Stop::Limit(StopReason::TimeLimit)),
                }
            }
            () = cancel.cancelled() => Err(Stop::Limit(StopReason::Cancelled)),
        };

        let (reason, notice) = match outcome {
            Ok(reason) => (reason, None),
            Err(Stop::Limit(reason)) => (reason, Some(limit_notice(reason))),
            Err(Stop::Failed(message)) => {
                events.send(TurnEvent::Error(TurnError { message: message.into(), code: "turn_failed".into() }));
                (StopReason::Error, None)
            }
        };
        let Progress { mut text, cards, iterations, tokens } =
            std::mem::take(&mut *progress.lock().expect("not poisoned"));
        if let Some(notice) = notice {
            if !text.is_empty() {
                text.push_str("\n\n");
            }
            text.push_str(&format!("_{notice}_"));
        }
        if !text.is_empty() || !cards.is_empty() {
            let cards_json = (!cards.is_empty()).then(|| serde_json::to_string(&cards).expect("cards serialize"));
            let saved = db::append_message(
                &self.pool,
                &input.conversation_id,
                NewMessage { role: "assistant", content: &text, cards: cards_json, ..Default::default() },
            )
            .await;
            match saved {
                Ok(message_id) => events.send(TurnEvent::Message(FinishedMessage {
                    message_id,
                    html: crate::markdown::render(&text),
                    text,
                })),
                Err(error) => tracing::error!(error = format!("{error:#}"), "cannot save the assistant's reply"),
            }
        }
        if let Err(error) = db::finish_turn(&self.pool, &input.turn_id, reason.as_str(), iterations, tokens).await {
            tracing::error!(error = format!("{error:#}"), "cannot record the end of the turn");
        }
        tracing::info!(stop_reason = reason.as_str(), iterations, tokens, "turn finished");
        events.send(TurnEvent::Done(TurnDone { stop_reason: reason.as_str().into() }));
    }

    async fn fail(&self, events: &EventSink, message: &'static str) {
        events.send(TurnEvent::Error(TurnError { message: message.into(), code: "turn_failed".into() }));
        events.send(TurnEvent::Done(TurnDone { stop_reason: StopReason::Error.as_str().into() }));
    }

    async fn turn_loop(&self, input: &TurnInput, events: &EventSink, progress: &Mutex<Progress>) -> Result<(), Stop> {
        let scope = ExecutionScope {
            workspace_id: input.caller.workspace_id.clone(),
            external_user_id: input.caller.external_user_id.clone(),
            permissions: input.caller.permissions.clone(),
            request_id: input.turn_id.clone(),
        };
        let target = self.host_target(&input.caller.workspace_id).await?;
        let (tools, context) = match &target {
            None => (Vec::new(), json!({})),
            Some((target, allowed)) => {
                let (tools, context) =
                    tokio::join!(self.host.list_tools(target, &scope, allowed), self.host.context(target, &scope));
                let tools = tools.map_err(|error| {
                    tracing::warn!(%error, code = error.code(), "GET /tools failed");
                    Stop::Failed(error.user_message())
                })?;
                let context = context.unwrap_or_else(|error| {
                    tracing::warn!(%error, code = error.code(), "GET /context failed; continuing without it");
                    json!({})
                });
                (tools, context)
            }
        };

        let history = db::messages(&self.pool, &input.conversation_id).await.map_err(|error| {
            tracing::error!(error = format!("{error:#}"), "cannot read the conversation");
            Stop::Failed("The conversation could not be loaded.")
        })?;
        let mut messages = vec![ChatMessage::System(prompt::system_prompt(&context))];
        messages.extend(prompt::transcript(&history));
        let mut turn_cards = TurnCards::default();

        for iteration in 1..=self.limits.max_iterations {
            progress.lock().expect("not poisoned").iterations = iteration;
            let mut first_delta = true;
            let step = self
                .model
                .step(&messages, &tools, |delta| {
                    let mut p = progress.lock().expect("not poisoned");
                    // Text of a later step is a new paragraph of the same reply.
                    let delta =
                        if first_delta && !p.text.is_empty() { format!("\n\n{delta}") } else { delta.to_owned() };
                    first_delta = false;
                    p.text.push_str(&delta);
                    events.send(TurnEvent::Text(TextDelta { delta }));
                })
                .await
                .map_err(|error| {
                    tracing::warn!(%error, "model step failed");
                    Stop::Failed("The assistant's model could not answer. Please try again.")
                })?;
            let tokens = {
                let mut p = progress.lock().expect("not poisoned");
                p.tokens += step.tokens;
                p.tokens
            };
            if step.tool_calls.is_empty() {
                return Ok(());
            }
            let calls_json = serde_json::to_string(&step.tool_calls).expect("tool calls serialize");
            self.save(
                input,
                NewMessage {
                    role: "assistant",
                    content: &step.text,
                    tool_calls: Some(calls_json),
                    ..Default::default()
                },
            )
            .await?;
            messages.push(ChatMessage::Assistant { text: step.text.clone(), tool_calls: step.tool_calls.clone() });

            let target = target.as_ref().map(|(t, _)| t);
            let results = futures::future::join_all(
                step.tool_calls.iter().map(|call| self.run_call(call, &tools, target, &scope, events)),
            )
            .await;
            for (call, (content, cards)) in step.tool_calls.iter().zip(results) {
                self.save(
                    input,
                    NewMessage { role: "tool", content: &content, tool_call_id: Some(&call.id), ..Default::default() },
                )
                .await?;
                messages.push(ChatMessage::Tool { call_id: call.id.clone(), content });
                let admitted = turn_cards.admit(cards);
                if !admitted.is_empty() {
                    progress.lock().expect("not poisoned").cards.extend(admitted.iter().cloned());
                    events.send(TurnEvent::Display(DisplayCards { call_id: call.id.clone(), cards: admitted }));
                }
            }
            if tokens >= self.limits.max_turn_tokens {
                return Err(Stop::Limit(StopReason::TokenLimit));
            }
        }
        Err(Stop::Limit(StopReason::IterationLimit))
    }

    async fn save(&self, input: &TurnInput, message: NewMessage<'_>) -> Result<String, Stop> {
        db::append_message(&self.pool, &input.conversation_id, message).await.map_err(|error| {
            tracing::error!(error = format!("{error:#}"), "cannot save the transcript");
            Stop::Failed("The conversation could not be saved.")
        })
    }

    /// The workspace's tool host, with its secret opened, if one is connected.
    async fn host_target(&self, workspace_id: &str) -> Result<Option<(HostTarget, Vec<String>)>, Stop> {
        let failed = |error: anyhow::Error| {
            tracing::error!(error = format!("{error:#}"), "cannot load the workspace's integration");
            Stop::Failed("The assistant is not set up correctly.")
        };
        let Some(row) = db::integration(&self.pool, workspace_id).await.map_err(failed)? else {
            return Ok(None);
        };
        let secret = self.vault.open(&row.secret_enc).map_err(failed)?;
        let base_url = url::Url::parse(&row.base_url).map_err(|e| failed(e.into()))?;
        Ok(Some((HostTarget { base_url, secret }, row.allowed_tools())))
    }

    /// Runs one tool call and returns what the model is told, and the
    /// sanitized cards. The model's mistakes never reach the host.
    async fn run_call(
        &self,
        call: &ToolCall,
        tools: &[ToolSpec],
        target: Option<&HostTarget>,
        scope: &ExecutionScope,
        events: &EventSink,
    ) -> (String, Vec<DisplayCard>) {
        let Some(tool) = tools.iter().find(|t| t.name == call.name) else {
            let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
            return (
                tool_error(&format!("unknown tool; the tools are: {}", names.join(", ")), "unknown_tool"),
                Vec::new(),
            );
        };
        let arguments = if call.arguments.trim().is_empty() {
            json!({})
        } else {
            match serde_json::from_str::<Value>(&call.arguments) {
                Ok(value @ Value::Object(_)) => value,
                _ => return (tool_error("the arguments are not a JSON object", "invalid_arguments"), Vec::new()),
            }
        };
        let Some(target) = target else {
            return (tool_error("no tool host is connected", "no_host"), Vec::new());
        };
        let activity = |status: &str| {
            events.send(TurnEvent::Tool(ToolActivity {
                call_id: call.id.clone(),
                name: tool.name.clone(),
                verb: tool.verb.as_str().into(),
                status: status.into(),
            }))
        };
        if tool.verb != Verb::Get {
            activity("failed");
            return (
                tool_error(
                    "not executed: changes need the user's confirmation, which is not available here yet",
                    "not_executed",
                ),
                Vec::new(),
            );
        }
        activity("started");
        match self.host.execute(target, &tool.name, &call.id, &arguments, scope).await {
            Ok(output) => {
                activity("succeeded");
                let cards = cards_from_output(&output);
                (for_model(output), cards)
            }
            Err(error) => {
                tracing::warn!(tool = %tool.name, code = error.code(), %error, "tool call failed");
                activity("failed");
                (tool_error(error.user_message(), error.code()), Vec::new())
            }
        }
    }
}

fn tool_error(message: &str, code: &str) -> String {
    json!({ "error": message, "code": code }).to_string()
}

/// The output as the model sees it: without `display` (the user sees the
/// cards) and bounded in size.
fn for_model(mut output: Value) -> String {
    if let Some(map) = output.as_object_mut() {
        map.remove("display");
    }
    let text = output.to_string();
    if text.chars().count() <= MAX_TOOL_RESULT_CHARS {
        return text;
    }
    let partial: String = text.chars().take(MAX_TOOL_RESULT_CHARS).collect();
    json!({ "truncated": true, "partial": partial }).to_string()
}

fn limit_notice(reason: StopReason) -> &'static str {
    match reason {
        StopReason::IterationLimit => "I stopped here: this request needed more steps than I may take in one turn.",
        StopReason::TimeLimit => "I stopped here: this request took longer than I may spend on one turn.",
        StopReason::TokenLimit => "I stopped here: this request used more of the model than one turn allows.",
        StopReason::Cancelled => "Stopped.",
        _ => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_model_does_not_see_display_and_long_output_is_bounded() {
        let text = for_model(json!({"status": "ok", "display": [{"title": "x"}]}));
        assert_eq!(text, r#"{"status":"ok"}"#);
        let long = for_model(json!({"blob": "x".repeat(MAX_TOOL_RESULT_CHARS * 2)}));
        let parsed: Value = serde_json::from_str(&long).unwrap();
        assert_eq!(parsed["truncated"], true);
        assert!(long.len() < MAX_TOOL_RESULT_CHARS + 100);
    }
}
