//! Before the first model step: the workspace's tool host, its tools and
//! context fetched once and concurrently with the user's execution scope,
//! the context quoted into the system prompt as untrusted data, and the
//! conversation's transcript.

use serde_json::json;

use super::context::{Stop, Turn};
use super::prompt;
use crate::db;
use crate::host::{ExecutionScope, HostTarget, ToolSpec};
use crate::llm::{ChatMessage, Model};

/// What the model steps work with.
pub(super) struct Prepared {
    /// The workspace's tool host, if one is connected.
    pub target: Option<HostTarget>,
    /// The connected integration's version (see `ConnectedHost`).
    pub integration_version: Option<i64>,
    /// Who the turn acts for; the turn id is the `requestId`.
    pub scope: ExecutionScope,
    /// The tools the host offers this user, less those the workspace disallows.
    pub tools: Vec<ToolSpec>,
    /// What the model is sent: the system prompt, the transcript, and
    /// every step and tool result of this turn so far.
    pub messages: Vec<ChatMessage>,
    /// The workspace's own model, or the server's.
    pub model: Model,
}

impl Turn<'_> {
    pub(super) async fn prepare(&self) -> Result<Prepared, Stop> {
        let engine = self.engine;
        let scope = self.input.caller.scope(&self.input.turn_id);
        let host = engine.workspaces.host(&self.input.caller.workspace_id).await.map_err(|error| {
            tracing::error!(error = format!("{error:#}"), "cannot load the workspace's integration");
            Stop::Failed("error_setup")
        })?;
        let (tools, context) = match &host {
            None => (Vec::new(), json!({})),
            Some(host) => {
                let (tools_scope, context_scope) = (scope.for_call(), scope.for_call());
                let (tools, context) = tokio::join!(
                    engine.host.list_tools(&host.target, &tools_scope, &host.allowed_tools),
                    engine.host.context(&host.target, &context_scope)
                );
                let tools = tools.map_err(|error| {
                    tracing::warn!(%error, code = error.code(), "GET /tools failed");
                    Stop::Failed(error.message_key())
                })?;
                let context = context.unwrap_or_else(|error| {
                    tracing::warn!(%error, code = error.code(), "GET /context failed; continuing without it");
                    json!({})
                });
                (tools, context)
            }
        };
        let mut model = match engine.workspaces.model(&self.input.caller.workspace_id).await {
            Ok(own) => own.unwrap_or_else(|| engine.model.clone()),
            Err(error) => {
                tracing::error!(error = format!("{error:#}"), "cannot load the workspace's model");
                return Err(Stop::Failed("error_setup"));
            }
        };
        let history = db::messages(&engine.pool, &self.input.conversation_id).await.map_err(|error| {
            tracing::error!(error = format!("{error:#}"), "cannot read the conversation");
            Stop::Failed("error_load")
        })?;
        let mut messages = vec![ChatMessage::System(prompt::system_prompt(&context, self.input.lang))];
        messages.extend(prompt::transcript(&history));
        model.policy.history_tokens = engine.limits.max_history_tokens;
        let integration_version = host.as_ref().map(|h| h.version);
        Ok(Prepared { target: host.map(|h| h.target), integration_version, scope, tools, messages, model })
    }
}
