//! Pending actions from the engine's side: executing one after the user's
//! Apply, the wire form of an action, and the sweep that records the
//! honest outcome of executions a crash interrupted.

use widget::wire::{ActionStatus, PendingAction, ToolStatus};

use super::context::Turn;
use super::outcome::{ToolOutcome, tool_error};
use crate::db::actions::ActionRow;
use crate::db::{self, NewMessage};
use crate::host::ExecutionScope;

/// What an applied action came to.
pub(super) enum Executed {
    /// The host ran it, or failed to: the outcome for the model and the user.
    Done(ToolOutcome),
    /// The host ran nothing: its data moved since the preview (`409` with
    /// `"stale": true`). The action ended `stale`; a fresh preview follows.
    Stale,
}

impl Turn<'_> {
    /// Calls the host's execute once for an action in `executing`, with the
    /// frozen arguments and scope and the action id as `requestId`.
    pub(super) async fn execute_action(&self, action: &ActionRow) -> Executed {
        let engine = self.engine;
        let started = std::time::Instant::now();
        let activity = |status| self.events.tool_activity(&action.call_id, &action.tool, action.verb, status);
        let finish = |status, error| record_end(&engine.pool, action, status, error, started);
        let sources = engine.workspaces.sources(&self.input.caller.workspace_id).await.unwrap_or_else(|error| {
            tracing::error!(error = format!("{error:#}"), "cannot load the workspace's integrations");
            Vec::new()
        });
        let Some(source) = sources.iter().find(|s| s.name == action.integration()) else {
            finish(ActionStatus::Failed, Some("no_host")).await;
            activity(ToolStatus::Failed);
            return Executed::Done(ToolOutcome::error("no tool host is connected", "no_host"));
        };
        if self.input.test.as_ref().is_some_and(|test| !test.execute) {
            // An assistant test run: the change is recorded, not made.
            activity(ToolStatus::Started);
            finish(ActionStatus::Succeeded, None).await;
            activity(ToolStatus::Succeeded);
            tracing::info!(action_id = %action.id, "a test run's action would apply");
            return Executed::Done(ToolOutcome::output(serde_json::json!({
                "status": format!("Would apply (an assistant test run: nothing was changed): {}", action.preview),
                "would_apply": true,
            })));
        }
        let scope = frozen_scope(action);
        activity(ToolStatus::Started);
        let executed = engine.sources.execute(source, &action.tool, &action.call_id, &action.arguments(), &scope).await;
        self.count_tool_call();
        match executed {
            Ok(output) => {
                crate::metrics::tool_call(Some(action.verb), "ok");
                finish(ActionStatus::Succeeded, None).await;
                activity(ToolStatus::Succeeded);
                tracing::info!(action_id = %action.id, "action executed");
                Executed::Done(ToolOutcome::output(output))
            }
            Err(error @ crate::host::HostError::Stale(_)) => {
                crate::metrics::tool_call(Some(action.verb), "stale");
                finish(ActionStatus::Stale, Some(error.code())).await;
                tracing::info!(action_id = %action.id, %error, "the host found the action stale; nothing ran");
                activity(ToolStatus::Failed);
                Executed::Stale
            }
            Err(error) => {
                crate::metrics::tool_call(Some(action.verb), "error");
                finish(ActionStatus::Failed, Some(error.code())).await;
                tracing::warn!(action_id = %action.id, code = error.code(), %error, "action failed at the host");
                activity(ToolStatus::Failed);
                Executed::Done(ToolOutcome::error(&error.for_model(), error.code()))
            }
        }
    }
}

/// Calls the MCP server once for an app's action in `executing` (the
/// visitor applied it in the app's chrome), with the frozen arguments and
/// scope and the action id as `requestId`; records how it ended. The whole
/// `CallToolResult` goes back to the app (an `isError` one ends the action
/// `failed`), or what failed; no model step follows.
pub async fn execute_for_app(
    pool: &db::Pool,
    workspaces: &crate::workspaces::Workspaces,
    sources: &crate::sources::Sources,
    action: &ActionRow,
) -> Result<serde_json::Value, String> {
    let started = std::time::Instant::now();
    let connected = workspaces.sources(&action.workspace_id).await.unwrap_or_else(|error| {
        tracing::error!(error = format!("{error:#}"), "cannot load the workspace's integrations");
        Vec::new()
    });
    let scope = frozen_scope(action);
    let result = match connected.iter().find(|s| s.name == action.integration() && !s.is_remote()) {
        Some(source) => sources
            .call_for_app(source, &action.tool, &action.arguments(), &scope)
            .await
            .map_err(|error| (error.code(), error.for_model())),
        None => Err(("no_host", "the app's server is no longer connected".to_owned())),
    };
    let (status, error) = match &result {
        Ok(result) if result.get("isError").and_then(serde_json::Value::as_bool) == Some(true) => {
            (ActionStatus::Failed, Some("tool_error"))
        }
        Ok(_) => (ActionStatus::Succeeded, None),
        Err((code, _)) => (ActionStatus::Failed, Some(*code)),
    };
    crate::metrics::tool_call(Some(action.verb), if error.is_none() { "ok" } else { "error" });
    record_end(pool, action, status, error, started).await;
    tracing::info!(action_id = %action.id, outcome = status.as_str(), "an app's action executed");
    result.map_err(|(_, told)| told)
}

/// The scope an action was previewed with, its id as the `requestId`: an
/// execution acts exactly as the preview did.
fn frozen_scope(action: &ActionRow) -> ExecutionScope {
    ExecutionScope {
        workspace_id: action.workspace_id.clone(),
        external_user_id: action.external_user_id.clone(),
        permissions: action.permissions(),
        request_id: action.id.clone(),
    }
}

/// Records how an execution that began at `started` ended: its status
/// (from `executing`) and `action.executed` in the audit trail.
async fn record_end(
    pool: &db::Pool,
    action: &ActionRow,
    status: ActionStatus,
    error: Option<&'static str>,
    started: std::time::Instant,
) {
    if let Err(error) = db::actions::finish(pool, &action.id, status).await {
        tracing::error!(error = format!("{error:#}"), action_id = %action.id, "cannot record the action's end");
    }
    let detail = serde_json::json!({
        "action_id": action.id, "duration_ms": started.elapsed().as_millis() as u64, "error": error,
    });
    db::actions::record_life(pool, action, "system", "action.executed", Some(status.as_str()), detail).await;
}

/// Why an action cannot be applied where it stands now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unbound {
    /// The integration it was previewed on is gone or was reconnected.
    IntegrationChanged,
    /// The host no longer lists the tool, or the workspace no longer allows it.
    ToolGone,
}

impl Unbound {
    pub fn code(self) -> &'static str {
        match self {
            Unbound::IntegrationChanged => "integration_changed",
            Unbound::ToolGone => "tool_gone",
        }
    }

    /// What the user is told.
    pub fn message(self) -> &'static str {
        match self {
            Unbound::IntegrationChanged => {
                "The app's connection changed since this change was prepared. Ask the assistant again."
            }
            Unbound::ToolGone => "The app no longer offers this change. Ask the assistant again.",
        }
    }

    /// What the model is told, in the tool call's place.
    fn told(self) -> &'static str {
        match self {
            Unbound::IntegrationChanged => {
                "not run: the app's connection changed since the preview; offer to prepare the change again"
            }
            Unbound::ToolGone => "not run: the app no longer offers this tool; tell the user it cannot be done now",
        }
    }
}

/// Whether `action` may still be applied: the integration that previewed
/// it is still connected as it was (same name, URL and version), and still
/// lists the tool, with the same verb and the same definition, within the
/// workspace's allowlist. An action from before actions were bound checks
/// nothing; one from before definitions were digested checks no digest.
pub async fn binding(
    workspaces: &crate::workspaces::Workspaces,
    sources: &crate::sources::Sources,
    scope: &ExecutionScope,
    action: &ActionRow,
) -> Result<Option<Unbound>, crate::host::HostError> {
    let Some(url) = &action.integration_url else { return Ok(None) };
    let connected = match workspaces.sources(&action.workspace_id).await {
        Ok(connected) => connected,
        Err(error) => {
            tracing::error!(error = format!("{error:#}"), "cannot load the workspace's integrations");
            return Err(crate::host::HostError::Unreachable("the integration could not be loaded".into()));
        }
    };
    let Some(source) = connected
        .iter()
        .find(|s| s.name == action.integration() && &s.url == url && Some(s.version) == action.integration_version)
    else {
        return Ok(Some(Unbound::IntegrationChanged));
    };
    // An app's change is checked against what apps may call (tools only
    // apps see are not the model's).
    let tools = if action.from_app() {
        sources.app_tools(source).await?
    } else {
        sources.current_tools(source, &scope.for_call()).await?
    };
    let listed = tools.iter().any(|t| {
        t.origin.name == action.tool
            && t.verb == action.verb
            && action.tool_digest.as_ref().is_none_or(|digest| *digest == t.origin.digest)
    });
    Ok((!listed).then_some(Unbound::ToolGone))
}

/// Ends `action` as failed because it is `why` unbound, if it is still
/// open, and tells the model why in the tool call's place (the next turn
/// reads it; an app's action is answered to its app instead). True when
/// this call ended it.
pub async fn refuse(pool: &db::Pool, action: &ActionRow, why: Unbound, now: i64) -> anyhow::Result<bool> {
    let open = [ActionStatus::Pending, ActionStatus::ConfirmedOnce];
    if !db::actions::transition(pool, &action.id, &open, ActionStatus::Failed, now).await? {
        return Ok(false);
    }
    // An app's action has no tool call in the conversation: its app hears why.
    if !action.from_app() {
        let content = tool_error(why.told(), why.code());
        db::append_message(pool, &action.conversation_id, NewMessage::tool_result(&action.call_id, &content, &[]))
            .await?;
    }
    let detail = serde_json::json!({ "action_id": action.id, "error": why.code() });
    db::actions::record_life(pool, action, "system", "action.refused", Some(why.code()), detail).await;
    tracing::info!(action_id = %action.id, code = why.code(), "apply refused: the action is no longer bound to its preview");
    Ok(true)
}

/// How often interrupted executions are looked for.
pub const STUCK_SWEEP_EVERY: std::time::Duration = std::time::Duration::from_secs(60);

/// Records the honest outcome of actions whose execution was interrupted
/// (a crash or restart between the host call and its answer): failed, and
/// the model is told the outcome is unknown, so it neither claims success
/// nor retries blindly (an app's action: only the audit trail says so; the
/// app's request died with the process). Nothing is sent to the host again.
/// MCP Apps shown while their tool ran in a turn that died end
/// `cancelled` too, so their bridge stops asking. How many actions moved.
pub async fn abandon_stuck(pool: &db::Pool, limits: &crate::config::TurnLimits) -> anyhow::Result<usize> {
    let now = crate::ids::now_ms();
    let longest = now - limits.longest_turn().as_millis() as i64;
    let views = db::apps::cancel_stuck(pool, longest, INTERRUPTED).await?;
    if views > 0 {
        tracing::warn!(views, "apps whose turn was interrupted are cancelled");
    }
    let questions = db::elicitations::close_stuck(pool, longest, now).await?;
    if questions > 0 {
        tracing::warn!(questions, "requests for input whose turn was interrupted are closed");
    }
    // Longer than any execute call may take, so a live call is never touched.
    let cutoff = now - limits.tool_timeout.as_millis() as i64 - 60_000;
    let moved = db::actions::abandon_stuck(pool, cutoff).await?;
    for action in moved.iter().filter(|a| !a.from_app()) {
        let content = tool_error(
            "the outcome is unknown: the assistant was interrupted while the app carried out this change; \
             tell the user to check before asking again",
            "outcome_unknown",
        );
        db::append_message(pool, &action.conversation_id, NewMessage::tool_result(&action.call_id, &content, &[]))
            .await?;
        tracing::warn!(action_id = %action.id, "interrupted execution recorded as failed with an unknown outcome");
    }
    Ok(moved.len())
}

/// What an app whose turn died with its process is told (in English, as
/// the other reasons of `ui/notifications/tool-cancelled`: engine/close.rs).
const INTERRUPTED: &str = "The assistant was interrupted.";

/// Sweeps interrupted executions (and apps) now and every minute.
pub fn sweep_stuck_actions(pool: db::Pool, limits: crate::config::TurnLimits) {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(STUCK_SWEEP_EVERY);
        loop {
            tick.tick().await;
            if let Err(error) = abandon_stuck(&pool, &limits).await {
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
        verb: action.verb,
        preview: action.preview.clone(),
        arguments: action.arguments(),
        confirmations_required: action.confirmations_required,
        expires_at: crate::ids::rfc3339(action.expires_at),
        status: action.status,
        replaces: action.replaces.clone(),
    }
}
