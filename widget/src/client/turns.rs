//! The user's messages: sending them from the queue (`outbox`) one turn
//! after another — with their keys, again after a network failure, once
//! the network is back — and streaming each turn into a new bubble;
//! stopping a running turn, settling the reply, and restoring the
//! conversation after a reload (without a network, the copy kept for
//! reading offline).

use leptos::prelude::*;
use leptos::task::spawn_local;
use wasm_bindgen::JsValue;

use super::{WidgetError, api, boot, host_page, outbox, stream, token};
use crate::js;
use crate::state::{Bubble, Chat, Delivery, Outgoing};
use crate::wire::i18n::Msg;
use crate::wire::{Rating, Role};

/// Sends again after a network failure this many times (waiting 1, 2, 4 s).
const RETRIES: u32 = 3;

/// Sends the user's message: it queues (`outbox`), goes when its turn
/// comes, and its turn streams into a new bubble.
pub fn send(chat: Chat, text: String, files: String) {
    chat.error.set(None);
    // A new message answers an open action by moving on: the server cancels it.
    chat.action.set(None);
    chat.last_sent.set_value(vec![Outgoing {
        key: String::new(),
        text: text.clone(),
        files: files.clone(),
        bubble: 0,
    }]);
    outbox::add(chat, text, files);
    pump(chat);
}

/// Sends the first queued message when nothing else is on its way, the
/// widget knows its conversation and has a token, and the network is up.
/// A token's arrival, the end of a turn, the network coming back and
/// Retry call it again. A send that fails for the network goes again with
/// the same key, "Sending…", then "Not sent" with Retry; offline, it
/// waits for the network.
pub fn pump(chat: Chat) {
    if outbox::SENDING.get()
        || !outbox::SETTLED.get()
        || chat.busy.get_untracked()
        || chat.wait_seconds.get_untracked() > 0
    {
        return;
    }
    let Some(item) = outbox::first(chat) else { return };
    let not_sent = |b: Bubble| b.state.with_untracked(|s| s.delivery == Some(Delivery::NotSent));
    if outbox::bubble_of(chat, &item.key).is_some_and(not_sent) {
        return;
    }
    let Some(token) = chat.token.get_untracked() else { return };
    if !outbox::online() {
        chat.offline.set(true);
        return;
    }
    outbox::SENDING.set(true);
    outbox::BACK.set(false);
    outbox::mark(chat, &item.key, Some(Delivery::Sending));
    spawn_local(async move {
        let mut attempt = 0;
        let outcome = loop {
            match post(chat, &token, &item).await {
                Err(WidgetError::Unreachable) if attempt < RETRIES && outbox::online() => {
                    stream::sleep(1000 << attempt).await;
                    attempt += 1;
                }
                outcome => break outcome,
            }
        };
        outbox::SENDING.set(false);
        handed(chat, item, outcome).await;
    });
}

/// What became of a message handed to the server.
async fn handed(chat: Chat, item: Outgoing, outcome: Result<web_sys::Response, WidgetError>) {
    let asked = outbox::bubble_of(chat, &item.key);
    match outcome {
        // The network came back while it was on its way: it goes again.
        Err(WidgetError::Unreachable) if outbox::BACK.replace(false) => {
            outbox::mark(chat, &item.key, Some(Delivery::Queued));
            pump(chat);
        }
        Err(WidgetError::Unreachable) if !outbox::online() => {
            // Offline: it waits for the network (`watch`).
            chat.offline.set(true);
            outbox::mark(chat, &item.key, Some(Delivery::Queued));
        }
        Err(WidgetError::Unreachable) => {
            // The browser is online but the server cannot be reached: the
            // visitor retries (or the network's return does).
            chat.offline.set(true);
            outbox::mark(chat, &item.key, Some(Delivery::NotSent));
            chat.announce.set(chat.t(Msg::NotSent));
        }
        Err(WidgetError::Expired) => {
            // It goes again, with its key, once a fresh token arrives.
            outbox::mark(chat, &item.key, Some(Delivery::Queued));
            token::retry_after_renewal(chat);
        }
        outcome => {
            chat.offline.set(false);
            outbox::forget(chat, &item.key);
            if let Some(asked) = asked {
                asked.state.update(|s| s.delivery = None);
            }
            host_page::post_message_event(Role::User, None);
            let reply = chat.push(Role::Assistant, "");
            chat.busy.set(true);
            chat.announce.set(chat.t(Msg::Replying));
            let outcome = match outcome {
                Ok(response) => stream::follow(chat, reply, response).await,
                Err(error) => Err(error),
            };
            if outcome.as_ref().is_err_and(|e| e.retry_after().is_some())
                && let Some(asked) = asked
            {
                // Not taken (too many, or busy): Retry sends it again once allowed.
                chat.bubbles.update(|b| b.retain(|x| x.id != asked.id));
            }
            settle(chat, reply, outcome);
        }
    }
}

/// A message's own Retry: it goes again, first.
pub fn resend(chat: Chat, bubble: Bubble) {
    bubble.state.update(|s| s.delivery = Some(Delivery::Queued));
    pump(chat);
}

/// The alert's Retry: the first message not sent goes again; false when
/// there is none.
pub fn retry(chat: Chat) -> bool {
    let Some(first) = outbox::first(chat) else { return false };
    outbox::mark(chat, &first.key, Some(Delivery::Queued));
    pump(chat);
    true
}

/// A fresh token did not come: the first queued message waits for Retry.
pub fn hold(chat: Chat) {
    if let Some(item) = outbox::first(chat) {
        outbox::mark(chat, &item.key, Some(Delivery::NotSent));
    }
}

/// Follows the browser's network state: back online, queued messages go.
pub fn watch(chat: Chat) {
    use wasm_bindgen::JsCast;
    chat.offline.set(!outbox::online());
    // One plain listener for both events (the widget's lifetime): Leptos'
    // typed listener costs the WASM a kilobyte per event.
    let changed = wasm_bindgen::closure::Closure::<dyn Fn()>::new(move || {
        chat.offline.set(!outbox::online());
        // Back online: a message that was not sent goes again by itself
        // (once the one on its way, if any, has ended).
        if outbox::online() {
            outbox::BACK.set(outbox::SENDING.get());
            if !outbox::SENDING.get() {
                retry(chat);
            }
        }
    });
    for event in ["online", "offline"] {
        let _ = window().add_event_listener_with_callback(event, changed.as_ref().unchecked_ref());
    }
    changed.forget();
}

/// Hands a message to the server with its idempotency key: the turn's
/// stream, or why not.
pub async fn post(chat: Chat, token: &str, item: &Outgoing) -> Result<web_sys::Response, WidgetError> {
    let conversation = chat.conversation_id.get_untracked();
    let body = js::stringify(&js::object(&[
        ("conversation_id", js::text_or_null(conversation.as_deref())),
        ("message", JsValue::from_str(&item.text)),
        // The model is told the visitor's language.
        ("lang", JsValue::from_str(&boot::lang())),
        // Its files' ids (`{"ids", "html"}` from the attachments code).
        ("attachment_ids", js::get(&js::parse(&item.files), "ids")),
    ]));
    match api::call_with("POST", "/v1/chat/turns", token, Some(body), Some(("Idempotency-Key", &item.key))).await {
        Err(error) if error.is_not_found() => {
            chat.conversation_id.set(None);
            host_page::forget_conversation();
            Err(WidgetError::ConversationGone)
        }
        answer => answer,
    }
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
            // Kept for reading offline, as the server now shows it.
            spawn_local(async move {
                let _ = fetch_view(chat).await;
            });
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
    // The next queued message, if any, goes now.
    pump(chat);
}

/// What a screen reader is told of a finished reply: its text as shown
/// (the sanitized HTML's text, blocks apart: `js/dom.js`), not its markdown.
fn spoken(reply: Bubble) -> String {
    match reply.state.with_untracked(|s| s.html.clone()) {
        Some(html) => js::spoken(&html),
        None => reply.text.get_untracked(),
    }
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
                return pump(chat);
            }
            // To the next whole second left, so the figure changes on time.
            let to_next = (until - js_sys::Date::now()) as i32 % 1000;
            stream::sleep(to_next.max(50)).await;
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

/// Brings back the last conversation after a reload; without a network,
/// the copy kept for reading offline. Then queued messages may go.
pub async fn restore(chat: Chat) {
    if let Some(id) = host_page::remembered_conversation() {
        match fetch_view(chat).await {
            Ok(view) => show(chat, &view),
            Err(WidgetError::Unreachable) => show_offline(chat, &id),
            Err(error) if error.is_not_found() => host_page::forget_conversation(),
            Err(WidgetError::Expired) => return token::renew(chat),
            Err(_) => {}
        }
    }
    // The conversation is known: queued messages may go.
    outbox::SETTLED.set(true);
    outbox::show_queued(chat);
    pump(chat);
}

/// The remembered conversation as the server shows it now, kept for
/// reading offline.
async fn fetch_view(chat: Chat) -> Result<JsValue, WidgetError> {
    let id = host_page::remembered_conversation().ok_or(WidgetError::NotConnected)?;
    let token = chat.token.get_untracked().ok_or(WidgetError::NotConnected)?;
    let response = api::call("GET", &format!("/v1/conversations/{id}"), &token, None).await?;
    let text = api::text_of(&response).await.unwrap_or_default();
    host_page::keep_view(&text);
    Ok(js::parse(&text))
}

/// Shows the kept copy of conversation `id` without a network, marked offline.
pub fn show_offline(chat: Chat, id: &str) {
    chat.offline.set(true);
    if chat.bubbles.with_untracked(Vec::is_empty)
        && let Some(view) = host_page::kept_view(id)
    {
        show(chat, &view);
    }
}

/// Shows a conversation's messages (`GET /v1/conversations/{id}`), then
/// the queued ones after them.
fn show(chat: Chat, view: &JsValue) {
    let Some(id) = js::string(view, "id") else { return };
    chat.bubbles.set(Vec::new());
    chat.conversation_id.set(Some(id));
    chat.action.set(js::pending_action(&js::get(view, "pending_action")));
    for message in js::list(view, "messages") {
        let role = if js::role(&message) == Some(Role::User) { Role::User } else { Role::Assistant };
        let text = js::string(&message, "text").unwrap_or_default();
        if role == Role::User {
            // Asked again, the last one goes with its files.
            let files = js::files_of(&message);
            chat.last_sent.set_value(vec![Outgoing { key: String::new(), text: text.clone(), files, bubble: 0 }]);
        }
        let bubble = chat.push(role, &text);
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
    outbox::show_queued(chat);
}
