//! The turn engine: one user message (or the user's answer to a pending
//! action) in, a streamed, persisted answer out. Per turn it fetches the
//! host's tools and context once, then loops — model step, tools — within
//! the iteration, time and token limits (remote-tools-contract.md, "Verb
//! semantics"): `get` tools run by themselves, several at once; the first
//! `create`/`update`/`delete` of a step is previewed and becomes a pending
//! action that ends the turn; the rest of that step's changes are answered
//! as not executed.

pub mod actions;
pub mod events;
pub mod metrics;
pub mod prompt;
pub mod turns;

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use widget::wire::{
    ComponentEvent, DisplayCard, DisplayCards, FinishedMessage, TextDelta, ToolActivity, TurnDone, TurnError,
    TurnStarted,
};

use crate::auth::Caller;
use crate::component::HostComponent;
use crate::config::TurnLimits;
use crate::crypto::Vault;
use crate::db::actions::ActionRow;
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
    /// The Caddie tool side: a linked space reports its status to the hub
    /// after each turn (caddie-tool-contract-ct1.md §5).
    pub caddie: Option<std::sync::Arc<crate::caddie::Caddie>>,
}

/// What starts a turn.
#[derive(Clone, Debug)]
pub enum TurnStart {
    /// The user wrote a message.
    Message(String),
    /// The user applied this action; its status is already `executing`.
    Applied(ActionRow),
    /// The user cancelled this action, perhaps saying why.
    Declined(ActionRow, Option<String>),
}

/// One turn to run.
#[derive(Clone, Debug)]
pub struct TurnInput {
    pub caller: Caller,
    pub conversation_id: String,
    pub turn_id: String,
    pub start: TurnStart,
}

/// What a tool call comes to: what the model is told, and what the user sees.
#[derive(Debug, Default)]
pub(crate) struct ToolOutcome {
    pub content: String,
    pub cards: Vec<DisplayCard>,
    pub component: Option<HostComponent>,
}

impl ToolOutcome {
    fn error(message: &str, code: &str) -> Self {
        Self { content: tool_error(message, code), ..Self::default() }
    }

    /// A host's output: the model sees it without what is only shown.
    fn output(output: Value) -> Self {
        let cards = cards_from_output(&output);
        let component = crate::component::from_output(&output);
        Self { content: for_model(output), cards, component }
    }
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
    /// All the turn's text, as streamed.
    text: String,
    /// The text of the current model step.
    step_text: String,
    cards: Vec<DisplayCard>,
    iterations: u32,
    tokens: u64,
    /// The saved row that already holds the step's text (a pending action's).
    held_message_id: Option<String>,
}

type Shared = Arc<Mutex<Progress>>;

fn lock(progress: &Mutex<Progress>) -> std::sync::MutexGuard<'_, Progress> {
    progress.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
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
        let progress: Shared = Arc::default();
        if let Err(error) = self.open_turn(&input, &events, &progress).await {
            tracing::error!(error = format!("{error:#}"), "cannot start the turn");
            events.send(TurnEvent::Error(TurnError {
                message: "Your request could not be saved. Please try again.".into(),
                code: "turn_failed".into(),
            }));
            events.send(TurnEvent::Done(TurnDone { stop_reason: StopReason::Error.as_str().into() }));
            return;
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
        let reason = match outcome {
            Ok(reason) | Err(Stop::Limit(reason)) => reason,
            Err(Stop::Failed(message)) => {
                events.send(TurnEvent::Error(TurnError { message: message.into(), code: "turn_failed".into() }));
                StopReason::Error
            }
        };
        self.close_turn(&input, &events, &progress, reason).await;
    }

    /// Saves what starts the turn: the user's message (which supersedes any
    /// open action), or the outcome of the action the user answered.
    async fn open_turn(&self, input: &TurnInput, events: &EventSink, progress: &Shared) -> anyhow::Result<()> {
        db::start_turn(&self.pool, &input.turn_id, &input.conversation_id).await?;
        match &input.start {
            TurnStart::Message(text) => {
                for action in db::actions::supersede_open(&self.pool, &input.conversation_id).await? {
                    let content = tool_error("not run: the user sent a new message instead of answering", "superseded");
                    self.save_tool_result(input, &action.call_id, &content, &[]).await?;
                }
                db::append_message(
                    &self.pool,
                    &input.conversation_id,
                    NewMessage { role: "user", content: text, ..Default::default() },
                )
                .await?;
            }
            TurnStart::Applied(action) => {
                // Outside the turn's time limit and stop button: once the host
                // is called, its answer is recorded.
                let outcome = self.execute_action(input, action, events).await;
                let admitted = TurnCards::default().admit(outcome.cards);
                let message_id = self.save_tool_result(input, &action.call_id, &outcome.content, &admitted).await?;
                if !admitted.is_empty() {
                    lock(progress).cards.extend(admitted.iter().cloned());
                    events.send(TurnEvent::Display(DisplayCards { call_id: action.call_id.clone(), cards: admitted }));
                }
                if let Some(component) = outcome.component {
                    self.show_component(input, &action.call_id, &message_id, component, events).await;
                }
            }
            TurnStart::Declined(action, reason) => {
                let content = json!({ "error": "not run: the user declined this change", "code": "declined",
                    "user_reason": reason })
                .to_string();
                self.save_tool_result(input, &action.call_id, &content, &[]).await?;
            }
        }
        Ok(())
    }

    /// Saves the reply and reports how the turn ended.
    async fn close_turn(&self, input: &TurnInput, events: &EventSink, progress: &Shared, reason: StopReason) {
        let Progress { mut text, mut step_text, iterations, tokens, held_message_id, .. } =
            std::mem::take(&mut *lock(progress));
        let notice = limit_notice(reason);
        if !notice.is_empty() {
            for t in [&mut text, &mut step_text] {
                if !t.is_empty() {
                    t.push_str("\n\n");
                }
                t.push_str(&format!("_{notice}_"));
            }
        }
        let message_id = match held_message_id {
            Some(id) => Some(id),
            None if !step_text.is_empty() => {
                let saved = db::append_message(
                    &self.pool,
                    &input.conversation_id,
                    NewMessage { role: "assistant", content: &step_text, ..Default::default() },
                )
                .await;
                saved.map_err(|e| tracing::error!(error = format!("{e:#}"), "cannot save the reply")).ok()
            }
            None => None,
        };
        if let Some(message_id) = message_id
            && !text.is_empty()
        {
            events.send(TurnEvent::Message(FinishedMessage { message_id, html: crate::markdown::render(&text), text }));
        }
        if let Err(error) = db::finish_turn(&self.pool, &input.turn_id, reason.as_str(), iterations, tokens).await {
            tracing::error!(error = format!("{error:#}"), "cannot record the end of the turn");
        }
        tracing::info!(stop_reason = reason.as_str(), iterations, tokens, "turn finished");
        // The hub hears of the change before the user can navigate back to it.
        if let Some(caddie) = &self.caddie {
            crate::caddie::report::after_change(caddie, &self.pool, &input.caller.workspace_id).await;
        }
        events.send(TurnEvent::Done(TurnDone { stop_reason: reason.as_str().into() }));
    }

    async fn turn_loop(&self, input: &TurnInput, events: &EventSink, progress: &Mutex<Progress>) -> Result<(), Stop> {
        let scope = self.scope(&input.caller, &input.turn_id);
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
        let target = target.map(|(t, _)| t);

        let history = db::messages(&self.pool, &input.conversation_id).await.map_err(|error| {
            tracing::error!(error = format!("{error:#}"), "cannot read the conversation");
            Stop::Failed("The conversation could not be loaded.")
        })?;
        let mut messages = vec![ChatMessage::System(prompt::system_prompt(&context))];
        messages.extend(prompt::transcript(&history));
        let mut turn_cards = TurnCards::default();
        turn_cards.admit(lock(progress).cards.clone());

        for iteration in 1..=self.limits.max_iterations {
            let iteration_started = std::time::Instant::now();
            {
                let mut p = lock(progress);
                p.iterations = iteration;
                p.step_text.clear();
            }
            let step_started = std::time::Instant::now();
            let step = self
                .model
                .step(&messages, &tools, |delta| {
                    let mut p = lock(progress);
                    // Text of a later step is a new paragraph of the same reply.
                    let delta = if p.step_text.is_empty() && !p.text.is_empty() {
                        format!("\n\n{delta}")
                    } else {
                        delta.to_owned()
                    };
                    p.step_text.push_str(delta.trim_start_matches('\n'));
                    p.text.push_str(&delta);
                    events.send(TurnEvent::Text(TextDelta { delta }));
                })
                .await
                .map_err(|error| {
                    tracing::warn!(%error, "model step failed");
                    Stop::Failed("The assistant's model could not answer. Please try again.")
                })?;
            let mut waited = step_started.elapsed();
            tracing::debug!(iteration, duration_ms = waited.as_secs_f64() * 1000.0, "model step");
            let tokens = {
                let mut p = lock(progress);
                p.tokens += step.tokens;
                p.tokens
            };
            if step.tool_calls.is_empty() {
                metrics::record(iteration_started.elapsed().saturating_sub(waited));
                return Ok(());
            }
            let calls_json = serde_json::to_string(&step.tool_calls).expect("tool calls serialize");
            let assistant_row = self
                .save(
                    input,
                    NewMessage {
                        role: "assistant",
                        content: &step.text,
                        tool_calls: Some(calls_json),
                        ..Default::default()
                    },
                )
                .await?;
            lock(progress).step_text.clear();
            messages.push(ChatMessage::Assistant { text: step.text.clone(), tool_calls: step.tool_calls.clone() });

            // Plan every call; only the first change of a step may go ahead.
            let mut change: Option<(usize, &ToolSpec, Value)> = None;
            let mut plans: Vec<Plan> = Vec::with_capacity(step.tool_calls.len());
            for (i, call) in step.tool_calls.iter().enumerate() {
                match plan(call, &tools) {
                    Plan::Change(tool, args) if change.is_none() => {
                        change = Some((i, tool, args));
                        plans.push(Plan::Deferred);
                    }
                    Plan::Change(..) => plans.push(Plan::Answer(tool_error(
                        "not executed: only one change can wait for the user's confirmation at a time; \
                         propose this one again after the user has answered the first",
                        "not_executed",
                    ))),
                    other => plans.push(other),
                }
            }
            let (target_ref, scope_ref) = (target.as_ref(), &scope);
            let tools_started = std::time::Instant::now();
            let results =
                futures::future::join_all(step.tool_calls.iter().zip(&plans).map(|(call, plan)| async move {
                    match plan {
                        Plan::Get(tool, args) => {
                            Some(self.run_get(call, tool, args, target_ref, scope_ref, events).await)
                        }
                        Plan::Answer(content) => {
                            Some(ToolOutcome { content: content.clone(), ..ToolOutcome::default() })
                        }
                        Plan::Deferred | Plan::Change(..) => None,
                    }
                }))
                .await;
            waited += tools_started.elapsed();
            for (call, result) in step.tool_calls.iter().zip(results) {
                let Some(ToolOutcome { content, cards, component }) = result else { continue };
                let admitted = turn_cards.admit(cards);
                let message_id =
                    self.save_tool_result(input, &call.id, &content, &admitted).await.map_err(|error| {
                        tracing::error!(error = format!("{error:#}"), "cannot save a tool result");
                        Stop::Failed("The conversation could not be saved.")
                    })?;
                messages.push(ChatMessage::Tool { call_id: call.id.clone(), content });
                if !admitted.is_empty() {
                    lock(progress).cards.extend(admitted.iter().cloned());
                    events.send(TurnEvent::Display(DisplayCards { call_id: call.id.clone(), cards: admitted }));
                }
                if let Some(component) = component {
                    self.show_component(input, &call.id, &message_id, component, events).await;
                }
            }
            let proposed = change.is_some();
            if let Some((i, tool, args)) = change {
                let call = &step.tool_calls[i];
                metrics::record(iteration_started.elapsed().saturating_sub(waited));
                match self.propose(input, call, tool, &args, target.as_ref(), &scope, events).await {
                    Ok(()) => {
                        lock(progress).held_message_id = Some(assistant_row);
                        return Err(Stop::Limit(StopReason::PendingAction));
                    }
                    Err(content) => {
                        self.save_tool_result(input, &call.id, &content, &[]).await.map_err(|error| {
                            tracing::error!(error = format!("{error:#}"), "cannot save a tool result");
                            Stop::Failed("The conversation could not be saved.")
                        })?;
                        messages.push(ChatMessage::Tool { call_id: call.id.clone(), content });
                    }
                }
            }
            if !proposed {
                metrics::record(iteration_started.elapsed().saturating_sub(waited));
            }
            if tokens >= self.limits.max_turn_tokens {
                return Err(Stop::Limit(StopReason::TokenLimit));
            }
        }
        Err(Stop::Limit(StopReason::IterationLimit))
    }

    /// The execution scope sent to the host for this caller.
    pub(crate) fn scope(&self, caller: &Caller, request_id: &str) -> ExecutionScope {
        ExecutionScope {
            workspace_id: caller.workspace_id.clone(),
            external_user_id: caller.external_user_id.clone(),
            permissions: caller.permissions.clone(),
            request_id: request_id.to_owned(),
        }
    }

    async fn save(&self, input: &TurnInput, message: NewMessage<'_>) -> Result<String, Stop> {
        db::append_message(&self.pool, &input.conversation_id, message).await.map_err(|error| {
            tracing::error!(error = format!("{error:#}"), "cannot save the transcript");
            Stop::Failed("The conversation could not be saved.")
        })
    }

    async fn save_tool_result(
        &self,
        input: &TurnInput,
        call_id: &str,
        content: &str,
        cards: &[DisplayCard],
    ) -> anyhow::Result<String> {
        let cards = (!cards.is_empty()).then(|| serde_json::to_string(cards).expect("cards serialize"));
        db::append_message(
            &self.pool,
            &input.conversation_id,
            NewMessage { role: "tool", content, tool_call_id: Some(call_id), cards, ..Default::default() },
        )
        .await
    }

    /// Saves a tool result's component and shows it: a new one, or fresh
    /// data for the ones of its kind already shown. A component that cannot
    /// be saved is not shown (the reply goes on without it).
    async fn show_component(
        &self,
        input: &TurnInput,
        call_id: &str,
        message_id: &str,
        component: HostComponent,
        events: &EventSink,
    ) {
        let shown = db::components::show(
            &self.pool,
            &input.conversation_id,
            message_id,
            call_id,
            &component.kind,
            &component.data,
            &component.tools,
            component.update,
        )
        .await;
        let (component_id, update) = match shown {
            Ok(db::components::Shown::New(id)) => (id, false),
            Ok(db::components::Shown::Updated(id)) => (id, true),
            Err(error) => {
                tracing::error!(error = format!("{error:#}"), "cannot save a component");
                return;
            }
        };
        events.send(TurnEvent::Component(ComponentEvent {
            call_id: call_id.to_owned(),
            kind: component.kind,
            data: component.data,
            component_id,
            update,
        }));
    }

    /// The workspace's tool host, with its secret opened, if one is connected.
    async fn host_target(&self, workspace_id: &str) -> Result<Option<(HostTarget, Vec<String>)>, Stop> {
        self.workspace_host(workspace_id).await.map_err(|error| {
            tracing::error!(error = format!("{error:#}"), "cannot load the workspace's integration");
            Stop::Failed("The assistant is not set up correctly.")
        })
    }

    /// The workspace's tool host and allowlist, if one is connected.
    pub(crate) async fn workspace_host(&self, workspace_id: &str) -> anyhow::Result<Option<(HostTarget, Vec<String>)>> {
        let Some(row) = db::integration(&self.pool, workspace_id).await? else {
            return Ok(None);
        };
        let secret = self.vault.open(&row.secret_enc)?;
        let base_url = url::Url::parse(&row.base_url)?;
        Ok(Some((HostTarget { base_url, secret, trusted: row.builtin != 0 }, row.allowed_tools())))
    }

    /// Runs a `get` tool and returns what the model is told and the cards.
    async fn run_get(
        &self,
        call: &ToolCall,
        tool: &ToolSpec,
        arguments: &Value,
        target: Option<&HostTarget>,
        scope: &ExecutionScope,
        events: &EventSink,
    ) -> ToolOutcome {
        let Some(target) = target else {
            return ToolOutcome::error("no tool host is connected", "no_host");
        };
        let activity = |status: &str| tool_activity(events, &call.id, &tool.name, tool.verb, status);
        activity("started");
        let started = std::time::Instant::now();
        let result = self.host.execute(target, &tool.name, &call.id, arguments, scope).await;
        tracing::debug!(tool = %tool.name, duration_ms = started.elapsed().as_secs_f64() * 1000.0, "tool call");
        match result {
            Ok(output) => {
                activity("succeeded");
                ToolOutcome::output(output)
            }
            Err(error) => {
                tracing::warn!(tool = %tool.name, code = error.code(), %error, "tool call failed");
                activity("failed");
                ToolOutcome::error(error.user_message(), error.code())
            }
        }
    }
}

/// What to do with one tool call of a model step.
enum Plan<'a> {
    /// Answer the model with this content; nothing reaches the host.
    Answer(String),
    Get(&'a ToolSpec, Value),
    Change(&'a ToolSpec, Value),
    /// The step's change, handled after its reads.
    Deferred,
}

/// Checks a call against the tools offered: the model's mistakes (an
/// unknown tool, arguments that are not a JSON object or fail the tool's
/// `inputSchema`) become answers to the model and never reach the host.
fn plan<'a>(call: &ToolCall, tools: &'a [ToolSpec]) -> Plan<'a> {
    let Some(tool) = tools.iter().find(|t| t.name == call.name) else {
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
        return Plan::Answer(tool_error(&format!("unknown tool; the tools are: {}", names.join(", ")), "unknown_tool"));
    };
    let arguments = if call.arguments.trim().is_empty() {
        json!({})
    } else {
        match serde_json::from_str::<Value>(&call.arguments) {
            Ok(value @ Value::Object(_)) => value,
            _ => return Plan::Answer(tool_error("the arguments are not a JSON object", "invalid_arguments")),
        }
    };
    if let Err(problems) = crate::schema::check(&tool.input_schema, &arguments) {
        return Plan::Answer(tool_error(
            &format!("the arguments do not fit the tool's inputSchema: {problems}"),
            "invalid_arguments",
        ));
    }
    match tool.verb {
        Verb::Get => Plan::Get(tool, arguments),
        _ => Plan::Change(tool, arguments),
    }
}

fn tool_activity(events: &EventSink, call_id: &str, name: &str, verb: Verb, status: &str) {
    events.send(TurnEvent::Tool(ToolActivity {
        call_id: call_id.to_owned(),
        name: name.to_owned(),
        verb: verb.as_str().into(),
        status: status.into(),
    }));
}

fn tool_error(message: &str, code: &str) -> String {
    json!({ "error": message, "code": code }).to_string()
}

/// The output as the model sees it: without `display` and `component`
/// (the user sees those) and bounded in size.
fn for_model(mut output: Value) -> String {
    if let Some(map) = output.as_object_mut() {
        map.remove("display");
        map.remove("component");
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
        let text = for_model(json!({"status": "ok", "display": [{"title": "x"}], "component": {"kind": "k"}}));
        assert_eq!(text, r#"{"status":"ok"}"#);
        let long = for_model(json!({"blob": "x".repeat(MAX_TOOL_RESULT_CHARS * 2)}));
        let parsed: Value = serde_json::from_str(&long).unwrap();
        assert_eq!(parsed["truncated"], true);
        assert!(long.len() < MAX_TOOL_RESULT_CHARS + 100);
    }

    fn tools() -> Vec<ToolSpec> {
        serde_json::from_value(json!([
            {"name": "find", "verb": "get", "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}},
            {"name": "remove", "verb": "delete", "inputSchema": {"type": "object"}},
        ]))
        .unwrap()
    }

    fn call(name: &str, arguments: &str) -> ToolCall {
        ToolCall { id: "c".into(), name: name.into(), arguments: arguments.into() }
    }

    #[test]
    fn the_models_mistakes_never_reach_the_host() {
        let tools = tools();
        for (name, args) in
            [("nope", "{}"), ("find", "not json"), ("find", "[1]"), ("find", r#"{"q": 5}"#), ("find", "{}")]
        {
            assert!(matches!(plan(&call(name, args), &tools), Plan::Answer(_)), "{name} {args}");
        }
        assert!(matches!(plan(&call("find", r#"{"q": "x"}"#), &tools), Plan::Get(..)));
        assert!(matches!(plan(&call("remove", ""), &tools), Plan::Change(..)));
    }
}
