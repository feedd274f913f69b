//! A read while it runs: its progress shown as the tool's activity, and its
//! requests for the user's input (an MCP server's form-mode elicitation)
//! shown as a form. The answer comes through `POST /v1/elicitations/{id}`
//! on any replica; the turn reads it from the database and hands it to the
//! server. The call's own time stands still while the user is asked (the
//! turn's time limit still holds); a request left unanswered when the call
//! or the turn ends is cancelled.

use serde_json::{Map, Value};
use widget::wire::ElicitationRequest;

use super::context::Turn;
use super::events::TurnEvent;
use crate::db::elicitations::{self, NewElicitation};
use crate::host::{ExecutionScope, HostError, ToolSpec};
use crate::llm::ToolCall;
use crate::sources::{CallEvent, ElicitAnswer, Elicitation, Read, Source};

/// How often the answers of a call's open requests are looked for.
const POLL: std::time::Duration = std::time::Duration::from_millis(200);

impl Turn<'_> {
    /// Runs a read, showing what its server tells while it runs.
    pub(super) async fn read_observed(
        &self,
        call: &ToolCall,
        tool: &ToolSpec,
        source: &Source,
        arguments: &Value,
        scope: &ExecutionScope,
    ) -> Result<Read, HostError> {
        if !source.tells_while_running() {
            // No channel to watch: its first block (1.5 KB) would be held
            // as long as the host takes (issue #47: memory per open stream).
            return self.engine.sources.read(source, tool, &call.id, arguments, scope, None).await;
        }
        let (events, mut told) = tokio::sync::mpsc::unbounded_channel();
        let read = self.engine.sources.read(source, tool, &call.id, arguments, scope, Some(events));
        tokio::pin!(read);
        let mut open: Vec<(String, Elicitation)> = Vec::new();
        let mut tick = tokio::time::interval(POLL);
        let result = loop {
            tokio::select! {
                result = &mut read => break result,
                Some(event) = told.recv() => match event {
                    CallEvent::Progress { progress, total, message } => {
                        self.events.tool_progress(&call.id, &tool.name, tool.verb, progress, total, message);
                    }
                    // Boxed, as the answers' hand-over: rare, and the
                    // call's future holds room for them while it waits.
                    CallEvent::Elicit(request) => {
                        if let Some(asked) = Box::pin(self.ask(call, tool, *request)).await {
                            open.push(asked);
                        }
                    }
                },
                _ = tick.tick(), if !open.is_empty() => Box::pin(self.hand_over_answers(&mut open)).await,
            }
        };
        if !open.is_empty() {
            let ids: Vec<String> = open.iter().map(|(id, _)| id.clone()).collect();
            if let Err(error) = elicitations::close(&self.engine.pool, &ids, self.engine.clock.now_ms()).await {
                tracing::warn!(error = format!("{error:#}"), "cannot close the call's requests for input");
            }
        }
        result
    }

    /// Shows a request for input as a form; `None` (the request declined
    /// or cancelled) when it is not a form we draw or cannot be saved.
    async fn ask(&self, call: &ToolCall, tool: &ToolSpec, request: Elicitation) -> Option<(String, Elicitation)> {
        let Some(fields) = crate::mcp::elicit::form(&request.schema, &request.order) else {
            tracing::info!(tool = %tool.name, "a request for input that is not a form we draw: declined");
            request.answer(ElicitAnswer::Decline);
            return None;
        };
        let id = crate::ids::new_id("eli");
        let caller = &self.input.caller;
        let saved = elicitations::insert(
            &self.engine.pool,
            NewElicitation {
                id: &id,
                turn_id: &self.input.turn_id,
                conversation_id: &self.input.conversation_id,
                workspace_id: &caller.workspace_id,
                external_user_id: &caller.external_user_id,
                call_id: &call.id,
                tool: &tool.name,
                fields: &serde_json::to_string(&fields).expect("fields serialize"),
            },
            self.engine.clock.now_ms(),
        )
        .await;
        if let Err(error) = saved {
            tracing::error!(error = format!("{error:#}"), "cannot save a request for input");
            request.answer(ElicitAnswer::Cancel);
            return None;
        }
        let message: String = request.message.chars().filter(|c| !c.is_control() || *c == '\n').take(1000).collect();
        tracing::info!(elicitation_id = %id, tool = %tool.name, "the tool asks the user for input");
        let mut shown = ElicitationRequest {
            elicitation_id: id.clone(),
            call_id: call.id.clone(),
            name: tool.name.clone(),
            message,
            fields,
            html: String::new(),
        };
        let lang = self.input.lang;
        shown.html = widget::form::elicitation_form(&shown, &|m| widget::wire::i18n::text(lang, m.key()));
        self.events.send(TurnEvent::Elicitation(shown));
        Some((id, request))
    }

    /// Hands the answers given so far to the server.
    async fn hand_over_answers(&self, open: &mut Vec<(String, Elicitation)>) {
        let ids: Vec<String> = open.iter().map(|(id, _)| id.clone()).collect();
        let answered = match elicitations::take_answers(&self.engine.pool, &ids).await {
            Ok(answered) => answered,
            Err(error) => {
                tracing::warn!(error = format!("{error:#}"), "cannot read the answers to requests for input");
                return;
            }
        };
        for (id, status, content) in answered {
            let Some(at) = open.iter().position(|(open_id, _)| *open_id == id) else { continue };
            let (_, request) = open.swap_remove(at);
            let answer = match status.as_str() {
                "accept" => {
                    let content: Map<String, Value> =
                        content.and_then(|c| serde_json::from_str(&c).ok()).unwrap_or_default();
                    ElicitAnswer::Accept(content)
                }
                "decline" => ElicitAnswer::Decline,
                _ => ElicitAnswer::Cancel,
            };
            tracing::info!(elicitation_id = %id, status, "the user answered a request for input");
            request.answer(answer);
        }
    }
}
