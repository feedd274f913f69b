//! Pending actions from the engine's side: proposing one (preview, then a
//! frozen row) and executing one after the user's Apply.

use serde_json::Value;
use widget::wire::PendingAction;

use super::events::{EventSink, TurnEvent};
use super::{Engine, ToolOutcome, TurnInput, tool_activity, tool_error};
use crate::db::actions::{ActionRow, NewAction};
use crate::host::{ExecutionScope, HostTarget, ToolSpec, Verb};
use crate::llm::ToolCall;

impl Engine {
    /// Previews a change with the host and freezes it as a pending action;
    /// on failure returns what the model is told instead.
    #[expect(clippy::too_many_arguments, reason = "one call site; a struct would only rename these")]
    pub(super) async fn propose(
        &self,
        input: &TurnInput,
        call: &ToolCall,
        tool: &ToolSpec,
        arguments: &Value,
        target: Option<&HostTarget>,
        scope: &ExecutionScope,
        events: &EventSink,
    ) -> Result<(), String> {
        let Some(target) = target else {
            return Err(tool_error("no tool host is connected", "no_host"));
        };
        let preview = self.host.preview(target, &tool.name, &call.id, arguments, scope).await.map_err(|error| {
            tracing::warn!(tool = %tool.name, code = error.code(), %error, "preview failed");
            tool_error(error.user_message(), error.code())
        })?;
        let preview: String = preview.chars().filter(|c| !c.is_control() || *c == '\n').take(1000).collect();
        let action = crate::db::actions::insert(
            &self.pool,
            NewAction {
                conversation_id: &input.conversation_id,
                workspace_id: &input.caller.workspace_id,
                external_user_id: &input.caller.external_user_id,
                permissions: &input.caller.permissions,
                call_id: &call.id,
                tool: &tool.name,
                verb: tool.verb.as_str(),
                arguments,
                preview: &preview,
                confirmations_required: if tool.verb == Verb::Delete { 2 } else { 1 },
                ttl_ms: self.limits.action_ttl.as_millis() as i64,
            },
        )
        .await
        .map_err(|error| {
            tracing::error!(error = format!("{error:#}"), "cannot save the pending action");
            tool_error("the change could not be prepared", "internal")
        })?;
        tracing::info!(action_id = %action.id, tool = %tool.name, "pending action proposed");
        events.send(TurnEvent::PendingAction(pending_action(&action)));
        Ok(())
    }

    /// Calls the host's execute once for an action in `executing`, with the
    /// frozen arguments and scope and the action id as `requestId`.
    pub(super) async fn execute_action(
        &self,
        input: &TurnInput,
        action: &ActionRow,
        events: &EventSink,
    ) -> ToolOutcome {
        let verb = match action.verb.as_str() {
            "create" => Verb::Create,
            "update" => Verb::Update,
            _ => Verb::Delete,
        };
        let finish = |status: &'static str| async move {
            if let Err(error) = crate::db::actions::finish(&self.pool, &action.id, status).await {
                tracing::error!(error = format!("{error:#}"), action_id = %action.id, "cannot record the action's end");
            }
        };
        let target = match self.host_target(&input.caller.workspace_id).await {
            Ok(Some((target, _))) => target,
            _ => {
                finish("failed").await;
                tool_activity(events, &action.call_id, &action.tool, verb, "failed");
                return ToolOutcome::error("no tool host is connected", "no_host");
            }
        };
        let scope = ExecutionScope {
            workspace_id: action.workspace_id.clone(),
            external_user_id: action.external_user_id.clone(),
            permissions: action.permissions(),
            request_id: action.id.clone(),
        };
        tool_activity(events, &action.call_id, &action.tool, verb, "started");
        match self.host.execute(&target, &action.tool, &action.call_id, &action.arguments(), &scope).await {
            Ok(output) => {
                finish("succeeded").await;
                tool_activity(events, &action.call_id, &action.tool, verb, "succeeded");
                tracing::info!(action_id = %action.id, "action executed");
                ToolOutcome::output(output)
            }
            Err(error) => {
                finish("failed").await;
                tracing::warn!(action_id = %action.id, code = error.code(), %error, "action failed at the host");
                tool_activity(events, &action.call_id, &action.tool, verb, "failed");
                ToolOutcome::error(error.user_message(), error.code())
            }
        }
    }
}

/// How often interrupted executions are looked for.
pub const STUCK_SWEEP_EVERY: std::time::Duration = std::time::Duration::from_secs(60);

/// Records the honest outcome of actions whose execution was interrupted
/// (a crash or restart between the host call and its answer): failed, and
/// the model is told the outcome is unknown, so it neither claims success
/// nor retries blindly. Nothing is sent to the host again.
pub async fn abandon_stuck(pool: &crate::db::Pool, tool_timeout: std::time::Duration) -> anyhow::Result<usize> {
    // Longer than any execute call may take, so a live call is never touched.
    let cutoff = crate::ids::now_ms() - tool_timeout.as_millis() as i64 - 60_000;
    let moved = crate::db::actions::abandon_stuck(pool, cutoff).await?;
    for action in &moved {
        let content = tool_error(
            "the outcome is unknown: the assistant was interrupted while the app carried out this change; \
             tell the user to check before asking again",
            "outcome_unknown",
        );
        crate::db::append_message(
            pool,
            &action.conversation_id,
            crate::db::NewMessage {
                role: "tool",
                content: &content,
                tool_call_id: Some(&action.call_id),
                ..Default::default()
            },
        )
        .await?;
        tracing::warn!(action_id = %action.id, "interrupted execution recorded as failed with an unknown outcome");
    }
    Ok(moved.len())
}

/// Sweeps interrupted executions now and every minute.
pub fn sweep_stuck_actions(pool: crate::db::Pool, tool_timeout: std::time::Duration) {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(STUCK_SWEEP_EVERY);
        loop {
            tick.tick().await;
            if let Err(error) = abandon_stuck(&pool, tool_timeout).await {
                tracing::warn!(error = format!("{error:#}"), "cannot sweep interrupted actions");
            }
        }
    });
}

/// The wire form of an action.
pub fn pending_action(action: &ActionRow) -> PendingAction {
    PendingAction {
        action_id: action.id.clone(),
        tool: action.tool.clone(),
        verb: action.verb.clone(),
        preview: action.preview.clone(),
        arguments: action.arguments(),
        confirmations_required: if action.confirmations_required == 2 { 2 } else { 1 },
        expires_at: rfc3339(action.expires_at),
        status: action.status.clone(),
    }
}

fn rfc3339(unix_ms: i64) -> String {
    time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(unix_ms) * 1_000_000)
        .ok()
        .and_then(|t| t.format(&time::format_description::well_known::Rfc3339).ok())
        .unwrap_or_default()
}
