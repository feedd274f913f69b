//! The turn's first phase: what starts it is saved before anything else.
//! A user's message supersedes any action still waiting for an answer; an
//! applied action is executed once (outside the time limit and the stop
//! button: once the host is called, its answer is recorded); a declined
//! one is answered to the model as declined. An Apply the host found stale
//! is answered as not run and handed on for a fresh preview (`reoffer`).

use serde_json::json;
use widget::wire::Role;

use super::actions::Executed;
use super::context::Turn;
use super::outcome::{ToolOutcome, tool_error};
use super::service::{TurnStart, UserMessage};
use crate::db::actions::ActionRow;
use crate::db::{self, NewMessage};

impl Turn<'_> {
    /// Saves what starts the turn; returns the applied action when the
    /// host found it stale (a fresh preview of it is offered).
    pub(super) async fn open(&self) -> anyhow::Result<Option<ActionRow>> {
        let (pool, conversation_id) = (&self.engine.pool, &self.input.conversation_id);
        // A conversation this turn began, or one touched with the turn's
        // claim (its message saved then: no action waited for an answer).
        let touched = matches!(&self.input.start, TurnStart::FirstMessage(_))
            || matches!(&self.input.start, TurnStart::Message(m) if m.saved_as.is_some());
        if !touched {
            db::touch_conversation(pool, conversation_id).await?;
        }
        match &self.input.start {
            TurnStart::FirstMessage(message) => self.save_message(message).await?,
            TurnStart::Message(message) if touched => self.save_message(message).await?,
            TurnStart::Message(message) => {
                for action in db::actions::supersede_open(pool, conversation_id).await? {
                    let content = tool_error("not run: the user sent a new message instead of answering", "superseded");
                    self.deliver(&action.call_id, ToolOutcome::answer(content)).await?;
                }
                self.save_message(message).await?;
            }
            TurnStart::Applied(action) => match self.execute_action(action).await {
                Executed::Done(outcome) => {
                    self.deliver(&action.call_id, outcome).await?;
                }
                Executed::Stale => {
                    let content = tool_error(
                        "not run: the app's data changed since its preview (for example a price or availability)",
                        "stale",
                    );
                    self.deliver(&action.call_id, ToolOutcome::answer(content)).await?;
                    return Ok(Some(ActionRow::clone(action)));
                }
            },
            TurnStart::Declined(action, reason) => {
                let content = json!({ "error": "not run: the user declined this change", "code": "declined",
                    "user_reason": reason })
                .to_string();
                self.deliver(&action.call_id, ToolOutcome::answer(content)).await?;
            }
        }
        Ok(None)
    }

    /// Saves the user's message (unless it was saved with the turn's
    /// claim) with its attachments, each with the text the model is given
    /// of it (read once, here).
    async fn save_message(&self, message: &UserMessage) -> anyhow::Result<()> {
        let (pool, conversation_id) = (&self.engine.pool, &self.input.conversation_id);
        let id = match &message.saved_as {
            Some(id) => id.clone(),
            None => db::append_message(pool, conversation_id, NewMessage::new(Role::User, &message.text)).await?,
        };
        let mut linked = Vec::with_capacity(message.attachments.len());
        for attachment in &message.attachments {
            linked.push((attachment.id.clone(), self.engine.attachments.text_of(attachment).await?));
        }
        db::attachments::link(pool, &id, &linked).await
    }
}
