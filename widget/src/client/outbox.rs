//! The user's messages on their way: nothing typed is lost or sent twice.
//!
//! Each message gets an idempotency key when it is written and keeps it:
//! a send that fails for the network is sent again with the same key
//! (the server answers a key it has seen with the turn it already started,
//! `Idempotency-Key` in assistant-api.md), shown as "Sending…", then as
//! "Not sent" with Retry. Offline, messages queue in order ("Waiting for
//! the network") and go out one turn after another, once, when the
//! network is back. The queue is kept in the frame's own `localStorage`
//! (the assistant's origin, never the host page's), so a reload keeps it;
//! so is the last conversation as the server last showed it, which the
//! widget shows, marked offline, when it opens without a network.

use std::cell::Cell;

use leptos::prelude::*;
use leptos::task::spawn_local;
use wasm_bindgen::JsValue;

use super::{WidgetError, boot, host_page, stream, token, turns};
use crate::js;
use crate::state::{Bubble, Chat, Delivery, Outgoing};
use crate::wire::Role;
use crate::wire::i18n::Msg;

/// Sends again after a network failure this many times (waiting 1, 2, 4 s).
const RETRIES: u32 = 3;

thread_local! {
    /// A message is being handed to the server (one at a time, in order).
    static SENDING: Cell<bool> = const { Cell::new(false) };
    /// The network came back while a message was on its way.
    static BACK: Cell<bool> = const { Cell::new(false) };
    /// The conversation the widget is in is known (restored, or none):
    /// a queued message goes to it, not to a new one.
    static SETTLED: Cell<bool> = const { Cell::new(false) };
}

fn storage_key() -> String {
    format!("ca:outbox:{}", boot::workspace_id())
}

fn view_key() -> String {
    format!("ca:view:{}", boot::workspace_id())
}

fn storage() -> Option<web_sys::Storage> {
    window().local_storage().ok().flatten()
}

/// True while the browser says it has a network.
pub fn online() -> bool {
    window().navigator().on_line()
}

/// Queues the user's new message and sends it when its turn comes.
pub fn add(chat: Chat, text: String) {
    chat.error.set(None);
    // A new message answers an open action by moving on: the server cancels it.
    chat.action.set(None);
    chat.last_sent.set(Some(text.clone()));
    let key = js::new_key();
    chat.outbox.update_value(|o| o.push(Outgoing { key, text, bubble: 0 }));
    save(chat);
    show_queued(chat);
    pump(chat);
}

/// Shows every queued message without a bubble of its own at the end of
/// the conversation, waiting.
pub fn show_queued(chat: Chat) {
    for item in chat.outbox.get_value() {
        if bubble_of(chat, &item.key).is_none() {
            let bubble = chat.push(Role::User, &item.text);
            bubble.state.update(|s| s.delivery = Some(Delivery::Queued));
            chat.outbox.update_value(|o| o.iter_mut().filter(|i| i.key == item.key).for_each(|i| i.bubble = bubble.id));
        }
    }
}

fn bubble_of(chat: Chat, key: &str) -> Option<Bubble> {
    let id = chat.outbox.with_value(|o| o.iter().find(|i| i.key == key).map(|i| i.bubble))?;
    chat.bubbles.with_untracked(|b| b.iter().find(|b| b.id == id).copied())
}

fn mark(chat: Chat, key: &str, delivery: Option<Delivery>) {
    if let Some(bubble) = bubble_of(chat, key) {
        bubble.state.update(|s| s.delivery = delivery);
    }
}

/// The queue as kept in storage: `{"items": [{"key", "text"}]}`.
fn save(chat: Chat) {
    let items = js_sys::Array::new();
    for item in chat.outbox.get_value() {
        items.push(&js::object(&[("key", JsValue::from_str(&item.key)), ("text", JsValue::from_str(&item.text))]));
    }
    if let Some(s) = storage() {
        let _ = s.set_item(&storage_key(), &js::stringify(&js::object(&[("items", items.into())])));
    }
}

/// Takes the queue a reload left in storage.
pub fn load(chat: Chat) {
    let kept = storage().and_then(|s| s.get_item(&storage_key()).ok().flatten()).unwrap_or_default();
    let items = js::list(&js::parse(&kept), "items")
        .iter()
        .filter_map(|i| Some(Outgoing { key: js::string(i, "key")?, text: js::string(i, "text")?, bubble: 0 }))
        .collect();
    chat.outbox.set_value(items);
}

/// Sends the first queued message when nothing else is on its way, the
/// widget knows its conversation and has a token, and the network is up.
/// A token's arrival, the end of a turn, the network coming back and
/// Retry call it again.
pub fn pump(chat: Chat) {
    if SENDING.get() || !SETTLED.get() || chat.busy.get_untracked() || chat.wait_seconds.get_untracked() > 0 {
        return;
    }
    let Some(item) = chat.outbox.with_value(|o| o.first().cloned()) else { return };
    if bubble_of(chat, &item.key).is_some_and(|b| b.state.with_untracked(|s| s.delivery == Some(Delivery::NotSent))) {
        return;
    }
    let Some(token) = chat.token.get_untracked() else { return };
    if !online() {
        chat.offline.set(true);
        return;
    }
    SENDING.set(true);
    BACK.set(false);
    mark(chat, &item.key, Some(Delivery::Sending));
    spawn_local(async move {
        let mut attempt = 0;
        let outcome = loop {
            match turns::post(chat, &token, &item.text, &item.key).await {
                Err(WidgetError::Unreachable) if attempt < RETRIES && online() => {
                    stream::sleep(1000 << attempt).await;
                    attempt += 1;
                }
                outcome => break outcome,
            }
        };
        SENDING.set(false);
        handed(chat, item, outcome).await;
    });
}

/// What became of a message handed to the server.
async fn handed(chat: Chat, item: Outgoing, outcome: Result<web_sys::Response, WidgetError>) {
    let asked = bubble_of(chat, &item.key);
    match outcome {
        // The network came back while it was on its way: it goes again.
        Err(WidgetError::Unreachable) if BACK.replace(false) => {
            mark(chat, &item.key, Some(Delivery::Queued));
            pump(chat);
        }
        Err(WidgetError::Unreachable) if !online() => {
            // Offline: it waits for the network (`watch`).
            chat.offline.set(true);
            mark(chat, &item.key, Some(Delivery::Queued));
        }
        Err(WidgetError::Unreachable) => {
            // The browser is online but the server cannot be reached: the
            // visitor retries (or the network's return does).
            chat.offline.set(true);
            mark(chat, &item.key, Some(Delivery::NotSent));
            chat.announce.set(chat.t(Msg::NotSent));
        }
        Err(WidgetError::Expired) => {
            // It goes again, with its key, once a fresh token arrives.
            mark(chat, &item.key, Some(Delivery::Queued));
            token::retry_after_renewal(chat);
        }
        outcome => {
            chat.offline.set(false);
            forget(chat, &item.key);
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
            turns::settle(chat, reply, outcome);
        }
    }
}

/// Takes a message out of the queue: the server has it (or refused it).
fn forget(chat: Chat, key: &str) {
    chat.outbox.update_value(|o| o.retain(|i| i.key != key));
    save(chat);
}

/// Retry on a message that was not sent: it goes again, first.
pub fn resend(chat: Chat, bubble: Bubble) {
    bubble.state.update(|s| s.delivery = Some(Delivery::Queued));
    pump(chat);
}

/// The alert's Retry: the first message not sent goes again; false when
/// there is none.
pub fn retry(chat: Chat) -> bool {
    let Some(first) = chat.outbox.with_value(|o| o.first().cloned()) else { return false };
    mark(chat, &first.key, Some(Delivery::Queued));
    pump(chat);
    true
}

/// The widget knows which conversation it is in: queued messages may go.
pub fn settled(chat: Chat) {
    SETTLED.set(true);
    show_queued(chat);
    pump(chat);
}

/// A fresh token did not come: the first queued message waits for Retry.
pub fn hold(chat: Chat) {
    if let Some(item) = chat.outbox.with_value(|o| o.first().cloned()) {
        mark(chat, &item.key, Some(Delivery::NotSent));
    }
}

/// True while a message is being handed to the server (nothing else may
/// replace the conversation on screen meanwhile).
pub fn in_flight() -> bool {
    SENDING.get()
}

/// Forgets the conversation kept for reading offline (the visitor left it).
pub fn drop_view() {
    if let Some(s) = storage() {
        let _ = s.remove_item(&view_key());
    }
}

/// Keeps the conversation as the server showed it, for reading offline.
pub fn keep_view(text: &str) {
    if let Some(s) = storage() {
        let _ = s.set_item(&view_key(), text);
    }
}

/// The conversation kept for reading offline, if it is `id`'s.
pub fn kept_view(id: &str) -> Option<JsValue> {
    let view = js::parse(&storage()?.get_item(&view_key()).ok()??);
    (js::string(&view, "id").as_deref() == Some(id)).then_some(view)
}

/// Follows the browser's network state: back online, queued messages go.
pub fn watch(chat: Chat) {
    use wasm_bindgen::JsCast;
    chat.offline.set(!online());
    // One plain listener for both events (the widget's lifetime): Leptos'
    // typed listener costs the WASM a kilobyte per event.
    let changed = wasm_bindgen::closure::Closure::<dyn Fn()>::new(move || {
        chat.offline.set(!online());
        // Back online: a message that was not sent goes again by itself
        // (once the one on its way, if any, has ended).
        if online() {
            BACK.set(SENDING.get());
            if !SENDING.get() {
                retry(chat);
            }
        }
    });
    for event in ["online", "offline"] {
        let _ = window().add_event_listener_with_callback(event, changed.as_ref().unchecked_ref());
    }
    changed.forget();
}
