//! A stale Apply's second chance: the host ran nothing because its data
//! moved since the preview, so the engine asks it for a fresh preview of
//! the same arguments and offers that for a new Apply. Nothing is ever
//! executed without the user seeing what it does now.
//!
//! In the transcript it reads as the assistant calling the tool again: an
//! assistant message (what the user is told) with one tool call, answered
//! like any other — by the new action's Apply or Cancel, or at once with
//! the preview's failure, after which the model explains.

use widget::wire::{Role, StopReason, TextDelta};

use super::context::{Stop, Turn};
use super::events::TurnEvent;
use super::outcome::ToolOutcome;
use super::plan::{Plan, plan_step};
use super::prepare::Prepared;
use crate::db::actions::ActionRow;
use crate::db::{self, NewMessage};
use crate::llm::{ChatMessage, ToolCall};

/// What the user is told when the fresh preview is offered.
const OFFERED: &str = "This changed in the app since you saw it, so nothing was done. Here is the change as it \
                       stands now: check it, and apply it if it is still what you want.";
/// What the user is told when no fresh preview can be offered.
const NOT_OFFERED: &str = "This changed in the app since you saw it, so nothing was done.";

impl Turn<'_> {
    /// Offers a fresh preview of `stale`'s arguments: the turn stops with
    /// the new pending action, or goes on to the model when the host no
    /// longer previews it (the model hears why and explains).
    pub(super) async fn reoffer(&self, stale: &ActionRow, prepared: &mut Prepared) -> Result<(), Stop> {
        // The tool under the name the model sees now (its source may have
        // been prefixed since); gone, there is no fresh preview to offer.
        let Some(offered) =
            prepared.tools.iter().find(|t| t.origin.integration == stale.integration() && t.origin.name == stale.tool)
        else {
            tracing::info!(action_id = %stale.id, "no fresh preview: the tool is no longer offered");
            return Ok(());
        };
        let call = ToolCall {
            id: crate::ids::new_id("call"),
            name: offered.name.clone(),
            arguments: stale.arguments.clone(),
            extra: None,
        };
        // The tool as the host lists it now: gone or changed, there is no
        // fresh preview to offer, and the model hears the stale result alone.
        let (plans, change) = plan_step(std::slice::from_ref(&call), &prepared.tools);
        let Some(change) = change.filter(|c| c.tool.verb == stale.verb) else {
            if let Some(Plan::Answer(why)) = plans.first() {
                tracing::info!(action_id = %stale.id, why, "no fresh preview: the tool no longer takes this call");
            }
            return Ok(());
        };
        let preview = self.preview_change(&call, change.tool, &change.arguments, prepared).await;
        let text = if preview.is_ok() { OFFERED } else { NOT_OFFERED };
        let delta = self.progress.push_text(text);
        self.events.send(TurnEvent::Text(TextDelta { delta }));
        let calls = std::slice::from_ref(&call);
        let asked = NewMessage::new(Role::Assistant, text)
            .with_tool_calls(serde_json::to_string(calls).expect("tool calls serialize"));
        let row =
            db::append_message(&self.engine.pool, &self.input.conversation_id, asked).await.map_err(Stop::unsaved)?;
        self.progress.lock().step_text.clear();
        prepared.messages.push(ChatMessage::Assistant { text: text.to_owned(), tool_calls: vec![call.clone()] });

        let frozen = match preview {
            Ok(preview) => {
                self.freeze(&call, change.tool, &change.arguments, &preview, prepared, Some(&stale.id)).await
            }
            Err(content) => Err(content),
        };
        match frozen {
            Ok(()) => {
                self.progress.lock().held_message_id = Some(row);
                Err(Stop::Limit(StopReason::PendingAction))
            }
            Err(content) => {
                let content = self.deliver(&call.id, ToolOutcome::answer(content)).await.map_err(Stop::unsaved)?;
                prepared.messages.push(ChatMessage::Tool { call_id: call.id, content });
                Ok(())
            }
        }
    }
}
