//! Answering the pending action: `confirm` returns the action in its new
//! state; `apply` and `cancel` stream the assistant's reply into a new
//! message. A refusal says why, from the server's code.

use leptos::prelude::*;
use leptos::task::spawn_local;

use super::{WidgetError, api, stream, token, turns};
use crate::js;
use crate::state::{Answer, Chat};
use crate::wire::Role;
use crate::wire::i18n::Msg;

pub fn answer(chat: Chat, answer: Answer, reason: Option<String>) {
    let (Some(action), Some(token)) = (chat.action.get_untracked(), chat.token.get_untracked()) else { return };
    chat.action_busy.set(true);
    chat.action_error.set(None);
    spawn_local(async move {
        let path = format!("/v1/actions/{}/{}", action.action_id, answer.path());
        let body = (answer == Answer::Cancel)
            .then(|| js::stringify(&js::object(&[("reason", js::text_or_null(reason.as_deref()))])));
        let response = match api::call("POST", &path, &token, body).await {
            Ok(response) => response,
            Err(error) => return refused(chat, error),
        };
        if answer == Answer::Confirm {
            let updated = js::pending_action(&js::get(&api::json_of(&response).await, "action"));
            chat.action.set(updated.or(Some(action)));
            chat.action_busy.set(false);
            stream::focus_action_card();
            return;
        }
        chat.action.set(None);
        chat.action_busy.set(false);
        // The card and its focused button are gone: focus goes on in the composer.
        stream::focus_composer();
        let reply = chat.push(Role::Assistant, "");
        chat.busy.set(true);
        chat.announce.set(chat.t(if answer == Answer::Apply { Msg::Applying } else { Msg::Cancelling }));
        let outcome = stream::follow(chat, reply, response).await;
        turns::settle(chat, reply, outcome);
    });
}

/// The answer did not go through: say why, next to the action while it is
/// still open, else as the chat's error.
fn refused(chat: Chat, error: WidgetError) {
    chat.action_busy.set(false);
    match error {
        WidgetError::Unreachable => {
            chat.action_error.set(Some(chat.t(Msg::Unreachable)));
        }
        WidgetError::Expired => {
            token::renew(chat);
            chat.action_error.set(Some(error.message(chat.words)));
        }
        error => {
            let current = match &error {
                WidgetError::Refused { body, .. } => js::pending_action(&js::get(body, "action")),
                _ => None,
            };
            let message = chat.t(match error.code() {
                Some("expired") => Msg::ActionExpired,
                Some("already_applied") => Msg::ActionAlreadyApplied,
                Some("action_in_progress") => Msg::ActionInProgress,
                Some("action_cancelled") => Msg::ActionCancelled,
                Some("confirmation_required") => Msg::ActionConfirmFirst,
                Some("integration_changed") => Msg::ActionIntegrationChanged,
                Some("tool_gone") => Msg::ActionToolGone,
                _ => Msg::ActionFailed,
            });
            let open = current.as_ref().is_some_and(|a| a.status.is_open());
            chat.action.set(if open { current } else { None });
            if open {
                chat.action_error.set(Some(message));
            } else {
                // The card is gone; the alert says why, the composer holds focus.
                chat.error.set(Some(message));
                stream::focus_composer();
            }
        }
    }
}
