//! Before the first model step: the workspace's tool sources, their tools
//! (each source listed once, all concurrently) and the Remote Tools host's
//! context, fetched with the user's execution scope, the context quoted
//! into the system prompt as untrusted data, and the conversation's
//! transcript.

use serde_json::json;

use super::context::{Stop, Turn};
use super::prompt;
use super::service::TurnStart;
use crate::db;
use crate::host::{ExecutionScope, ToolSpec};
use crate::llm::{ChatMessage, Model};
use crate::sources::{Source, offer};

/// What the model steps work with.
pub(super) struct Prepared {
    /// The workspace's tool sources, as connected when the turn began.
    pub sources: std::sync::Arc<[Source]>,
    /// Who the turn acts for; the turn id is the `requestId`.
    pub scope: ExecutionScope,
    /// The tools the sources offer this user, less those the workspace
    /// disallows, under the names the model sees (unique across sources).
    pub tools: Vec<ToolSpec>,
    /// What the model is sent: the system prompt, the transcript, and
    /// every step and tool result of this turn so far.
    pub messages: Vec<ChatMessage>,
    /// The workspace's own model, or the server's.
    pub model: Model,
}

impl Prepared {
    /// The source a tool came from.
    pub fn source_of(&self, tool: &ToolSpec) -> Option<&Source> {
        self.sources.iter().find(|s| s.name == tool.origin.integration)
    }
}

impl Turn<'_> {
    pub(super) async fn prepare(&self) -> Result<Prepared, Stop> {
        let engine = self.engine;
        let scope = self.input.caller.scope(&self.input.turn_id);
        let caller = &self.input.caller;
        let sources = engine.workspaces.turn_sources(&caller.workspace_id, caller.setup).await.map_err(|error| {
            tracing::error!(error = format!("{error:#}"), "cannot load the workspace's integrations");
            Stop::Failed("error_setup")
        })?;
        let scopes: Vec<(ExecutionScope, ExecutionScope)> =
            sources.iter().map(|_| (scope.for_call(), scope.for_call())).collect();
        let listings = sources.iter().zip(&scopes).map(|(source, (s, _))| engine.sources.tools(source, s));
        let contexts = sources.iter().zip(&scopes).map(|(source, (_, s))| engine.sources.context(source, s));
        let (listings, contexts) =
            tokio::join!(futures::future::join_all(listings), futures::future::join_all(contexts));
        // A source that cannot list its tools is left out of this turn; only
        // when every source failed does the turn fail (there is nothing to offer).
        let mut lists = Vec::with_capacity(listings.len());
        let mut failure = None;
        for (source, listed) in sources.iter().zip(listings) {
            match listed {
                Ok(tools) => lists.push(tools),
                Err(error) => {
                    tracing::warn!(integration = %source.name, %error, code = error.code(), "listing the tools failed");
                    failure = Some(error);
                }
            }
        }
        // The workspace's knowledge: the built-in search, when there is something to search.
        let knowledge = match caller.knowledge {
            Some(read) => read,
            // Not read with the caller (the test runner's): its row, as now.
            None => db::workspace(&engine.pool, &caller.workspace_id)
                .await
                .map_err(|error| {
                    tracing::error!(error = format!("{error:#}"), "cannot read the workspace's knowledge settings");
                    Stop::Failed("error_setup")
                })?
                .map(|row| row.turn_knowledge())
                .unwrap_or_default(),
        };
        if knowledge.any {
            lists.push(vec![crate::knowledge::tool_spec()]);
        }
        if let Some(error) = failure.filter(|_| lists.is_empty()) {
            return Err(Stop::Failed(error.message_key()));
        }
        let tools = offer(lists);
        let search_tool = tools.iter().find(|t| crate::knowledge::is_builtin(t)).map(|t| t.name.clone());
        let context = contexts.into_iter().flatten().next().map_or_else(
            || json!({}),
            |context| {
                context.unwrap_or_else(|error| {
                    tracing::warn!(%error, code = error.code(), "GET /context failed; continuing without it");
                    json!({})
                })
            },
        );
        let mut model = match engine.workspaces.turn_model(&caller.workspace_id, caller.setup).await {
            Ok(own) => own.unwrap_or_else(|| engine.model.clone()),
            Err(error) => {
                tracing::error!(error = format!("{error:#}"), "cannot load the workspace's model");
                return Err(Stop::Failed("error_setup"));
            }
        };
        // An assistant test may compare another model at the same endpoint.
        if let Some(name) = self.input.test.as_ref().and_then(|test| test.model.as_deref()) {
            model = model.named(name);
        }
        let mut system = prompt::system_prompt(&context, self.input.lang);
        system.push_str(&prompt::knowledge(search_tool.as_deref(), knowledge.only));
        let messages = match &self.input.start {
            // A conversation this turn began, with words only: its transcript
            // is those words (issue #47: not read back), no app of it has
            // told the model anything yet, and no file was sent in it.
            TurnStart::FirstMessage(m) if m.attachments.is_empty() => {
                vec![ChatMessage::System(system), ChatMessage::User(m.text.clone())]
            }
            _ => self.transcript(system, model.accepts_images).await?,
        };
        model.policy.history_tokens = engine.limits.max_history_tokens;
        Ok(Prepared { sources, scope, tools, messages, model })
    }

    /// The system prompt, what the conversation's apps told the model, and
    /// its transcript as saved, with what was attached (the current
    /// message's images too, for a model that takes them).
    async fn transcript(&self, mut system: String, accepts_images: bool) -> Result<Vec<ChatMessage>, Stop> {
        let (engine, conversation_id) = (self.engine, &self.input.conversation_id);
        let db::ForTurn { messages: history, app_context, attached } =
            db::for_turn(&engine.pool, conversation_id).await.map_err(|error| {
                tracing::error!(error = format!("{error:#}"), "cannot read the conversation");
                Stop::Failed("error_load")
            })?;
        if let Some(told) = app_context {
            system.push_str(&prompt::app_context(&told));
        }
        let sent = if attached {
            db::attachments::sent(&engine.pool, conversation_id).await.map_err(|error| {
                tracing::error!(error = format!("{error:#}"), "cannot read the conversation's attachments");
                Stop::Failed("error_load")
            })?
        } else {
            Vec::new()
        };
        let mut messages = vec![ChatMessage::System(system)];
        messages.extend(prompt::transcript(&history, &sent));
        if accepts_images {
            with_images(&engine.attachments, &history, &sent, &mut messages).await;
        }
        Ok(messages)
    }
}

/// The images a model that accepts them is given with a message, at most:
/// the current one's first few (earlier images are only named).
const MODEL_IMAGES: usize = 4;

/// Gives the current user message its images (the line naming each stays:
/// a tool takes an image by its attachment id). An image that cannot be
/// read stays only named.
async fn with_images(
    attachments: &crate::attachments::Attachments,
    history: &[db::MessageRow],
    sent: &[db::attachments::Sent],
    messages: &mut [ChatMessage],
) {
    let Some(current) = history.iter().rev().find(|row| row.role == widget::wire::Role::User) else { return };
    let mut images = Vec::new();
    for shown in sent.iter().filter(|s| s.message_id == current.id && s.media_type.starts_with("image/")) {
        if images.len() == MODEL_IMAGES {
            break;
        }
        match attachments.image_for_model(&shown.object_key, &shown.media_type).await {
            Ok(Some(image)) => images.push(image),
            Ok(None) => tracing::warn!(attachment_id = %shown.id, "an image could not be read for the model"),
            Err(error) => {
                tracing::warn!(attachment_id = %shown.id, error = format!("{error:#}"), "cannot read an image for the model")
            }
        }
    }
    if images.is_empty() {
        return;
    }
    if let Some(last) = messages.iter_mut().rev().find(|m| m.is_user())
        && let ChatMessage::User(text) = last
    {
        *last = ChatMessage::UserWithImages { text: std::mem::take(text), images };
    }
}
