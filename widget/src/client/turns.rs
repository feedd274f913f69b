//! The user's messages: sending one and streaming the turn into a new
//! bubble, stopping a running turn, settling the reply, and restoring the
//! conversation after a reload.

use leptos::prelude::*;
use leptos::task::spawn_local;
use wasm_bindgen::{JsCast, JsValue};

use super::{WidgetError, api, boot, host_page, stream, token};
use crate::js;
use crate::state::{Bubble, Chat};
use crate::wire::i18n::Msg;
use crate::wire::{Rating, Role};

/// Sends the user's message and streams the turn into a new bubble.
pub fn send(chat: Chat, text: String) {
    chat.error.set(None);
    // A new message answers an open action by moving on: the server cancels it.
    chat.action.set(None);
    chat.last_sent.set(Some(text.clone()));
    let asked = chat.push(Role::User, &text);
    let reply = chat.push(Role::Assistant, "");
    host_page::post_message_event(Role::User, None);
    chat.busy.set(true);
    chat.announce.set(chat.t(Msg::Replying));
    spawn_local(async move {
        let outcome = run(chat, reply, &text).await;
        chat.busy.set(false);
        if let Err(WidgetError::Expired) = outcome {
            // Ask for a fresh token; the message goes again when it arrives.
            chat.bubbles.update(|b| b.retain(|x| x.id != reply.id && x.id != asked.id));
            token::retry_after_renewal(chat, text);
            return;
        }
        if outcome.as_ref().is_err_and(|e| e.retry_after().is_some()) {
            // Not taken (too many, or busy): Retry sends it again once allowed.
            chat.bubbles.update(|b| b.retain(|x| x.id != asked.id));
        }
        settle(chat, reply, outcome);
    });
}

async fn run(chat: Chat, reply: Bubble, text: &str) -> Result<(), WidgetError> {
    let token = chat.token.get_untracked().ok_or(WidgetError::NotConnected)?;
    let conversation = chat.conversation_id.get_untracked();
    let body = js::stringify(&js::object(&[
        ("conversation_id", js::text_or_null(conversation.as_deref())),
        ("message", JsValue::from_str(text)),
        // The model is told the visitor's language.
        ("lang", JsValue::from_str(&boot::lang())),
    ]));
    let response = match api::call("POST", "/v1/chat/turns", &token, Some(body)).await {
        Err(error) if error.is_not_found() => {
            chat.conversation_id.set(None);
            host_page::forget_conversation();
            return Err(WidgetError::ConversationGone);
        }
        answer => answer?,
    };
    stream::follow(chat, reply, response).await
}

/// Settles a streamed reply: done, or failed with a message and Retry.
pub fn settle(chat: Chat, reply: Bubble, outcome: Result<(), WidgetError>) {
    chat.busy.set(false);
    chat.activity.set(None);
    // A tool's question is not waited for once the turn has ended.
    chat.elicitation.set(None);
    chat.turn_id.set(None);
    match outcome {
        Ok(()) => {
            // A turn that only proposed a change has no text of its own.
            drop_if_empty(chat, reply);
            // The reply itself, said once now that it is whole (the log
            // says nothing while it streams).
            let said = if reply.state.with_untracked(|s| s.stopped) { chat.t(Msg::StoppedNote) } else { spoken(reply) };
            if !said.is_empty() {
                chat.announce.set(said);
            }
            super::bus::status_changed();
        }
        Err(error) => {
            // An empty, failed reply is removed; a partial one stays, marked.
            if !drop_if_empty(chat, reply) {
                reply.state.update(|s| s.interrupted = true);
            }
            let message = error.message(chat.words);
            chat.error.set(Some(message.clone()));
            match error.retry_after() {
                Some(seconds) => {
                    let wait = chat.words.fill(Msg::Wait, "{n}", &seconds.to_string());
                    chat.announce.set(format!("{message} {wait}"));
                    count_down(chat, seconds);
                    // Retry waits: the user may write meanwhile.
                    stream::focus_composer();
                }
                None => {
                    chat.announce.set(message);
                    // The alert's Retry is where the user goes on.
                    stream::focus_retry();
                }
            }
        }
    }
}

/// What a screen reader is told of a finished reply: its text as shown
/// (the sanitized HTML's text, blocks apart), not its markdown.
fn spoken(reply: Bubble) -> String {
    let Some(html) = reply.state.with_untracked(|s| s.html.clone()) else { return reply.text.get_untracked() };
    let mut spaced = html;
    for end in ["</p>", "</li>", "</h1>", "</h2>", "</h3>", "</h4>", "</pre>", "</td>", "</th>", "<br>"] {
        spaced = spaced.replace(end, &format!(" {end}"));
    }
    // A template's content is inert: nothing in it loads or runs.
    let text = document()
        .create_element("template")
        .ok()
        .and_then(|t| t.dyn_into::<web_sys::HtmlTemplateElement>().ok())
        .and_then(|t| {
            t.set_inner_html(&spaced);
            t.content().text_content()
        })
        .unwrap_or_else(|| reply.text.get_untracked());
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Holds sending back for `seconds` (the server's `Retry-After`), showing
/// what is left each second, then says that the user may send again.
fn count_down(chat: Chat, seconds: u32) {
    let until = js_sys::Date::now() + f64::from(seconds) * 1000.0;
    chat.wait_seconds.set(seconds);
    spawn_local(async move {
        loop {
            let left = ((until - js_sys::Date::now()) / 1000.0).ceil().max(0.0) as u32;
            chat.wait_seconds.set(left);
            if left == 0 {
                chat.announce.set(chat.t(Msg::CanSend));
                return;
            }
            // To the next whole second left, so the figure changes on time.
            let to_next = (until - js_sys::Date::now()).rem_euclid(1000.0).max(50.0);
            stream::sleep(to_next as i32).await;
        }
    });
}

/// Removes a reply that has neither text, cards nor components; true if it did.
fn drop_if_empty(chat: Chat, reply: Bubble) -> bool {
    let empty = reply.text.with_untracked(String::is_empty)
        && reply.state.with_untracked(|s| s.cards.is_empty() && s.components.is_empty());
    if empty {
        chat.bubbles.update(|b| b.retain(|x| x.id != reply.id));
    }
    empty
}

/// Asks the server to stop the running turn.
pub fn stop(chat: Chat) {
    let (Some(turn_id), Some(token)) = (chat.turn_id.get_untracked(), chat.token.get_untracked()) else { return };
    spawn_local(async move {
        let _ = api::call("POST", &format!("/v1/turns/{turn_id}/stop"), &token, None).await;
    });
}

/// Brings back the last conversation after a reload.
pub async fn restore(chat: Chat) {
    let Some(id) = host_page::remembered_conversation() else { return };
    let Some(token) = chat.token.get_untracked() else { return };
    let response = match api::call("GET", &format!("/v1/conversations/{id}"), &token, None).await {
        Ok(response) => response,
        Err(error) if error.is_not_found() => return host_page::forget_conversation(),
        Err(WidgetError::Expired) => return token::renew(chat),
        Err(_) => return,
    };
    let view = api::json_of(&response).await;
    let Some(id) = js::string(&view, "id") else { return };
    chat.conversation_id.set(Some(id));
    chat.action.set(js::pending_action(&js::get(&view, "pending_action")));
    for message in js::list(&view, "messages") {
        let role = if js::role(&message) == Some(Role::User) { Role::User } else { Role::Assistant };
        let bubble = chat.push(role, &js::string(&message, "text").unwrap_or_default());
        bubble.state.update(|s| {
            s.html = js::string(&message, "html");
            s.message_id = js::string(&message, "id");
            s.rating = js::string(&js::get(&message, "feedback"), "rating").and_then(|r| Rating::parse(&r));
            s.cards = js::cards(&message, "cards");
        });
        for c in js::list(&message, "components") {
            if let (Some(id), Some(kind)) = (js::string(&c, "component_id"), js::string(&c, "kind")) {
                chat.show_component(bubble, id, kind, js::stringify(&js::get(&c, "data")), false);
            }
        }
    }
}
