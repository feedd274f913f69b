//! The user's messages the server has not taken yet, in order: each with
//! the idempotency key it got when it was written (the same for every
//! attempt: the server answers a key it has seen with the turn it already
//! started) and where it stands on screen ("Sending…", "Waiting for the
//! network", "Not sent"). The queue is kept for the token's subject
//! (`js/dom.js` `keepToken`: the frame's own storage, else the host
//! page's through the loader), so a reload keeps it. `turns` sends from it.

use std::cell::Cell;

use leptos::prelude::*;
use wasm_bindgen::JsValue;

use crate::js;
use crate::state::{Bubble, Chat, Delivery, Outgoing};
use crate::wire::Role;

thread_local! {
    /// A message is being handed to the server (one at a time, in order).
    pub static SENDING: Cell<bool> = const { Cell::new(false) };
    /// The network came back while a message was on its way.
    pub static BACK: Cell<bool> = const { Cell::new(false) };
    /// The conversation the widget is in is known (restored, or none):
    /// a queued message goes to it, not to a new one.
    pub static SETTLED: Cell<bool> = const { Cell::new(false) };
}

/// True while the browser says it has a network.
pub fn online() -> bool {
    window().navigator().on_line()
}

/// True while a message is being handed to the server (nothing else may
/// replace the conversation on screen meanwhile).
pub fn in_flight() -> bool {
    SENDING.get()
}

/// Queues the user's new message with a new key, shown as waiting.
pub fn add(chat: Chat, text: String, files: String) {
    let key = js::new_key();
    chat.outbox.update_value(|o| o.push(Outgoing { key, text, files, bubble: 0 }));
    save(chat);
    show_queued(chat);
}

/// Shows every queued message without a bubble of its own at the end of
/// the conversation, waiting.
pub fn show_queued(chat: Chat) {
    for item in chat.outbox.get_value() {
        if bubble_of(chat, &item.key).is_none() {
            let bubble = chat.push(Role::User, &item.text);
            bubble.state.update(|s| {
                s.delivery = Some(Delivery::Queued);
                // Its files, drawn by the attachments code, under its text.
                if let Some(files) = js::string(&js::parse(&item.files), "html") {
                    s.html = Some(format!("<p>{}</p>{files}", crate::html::escape(&item.text)));
                }
            });
            chat.outbox.update_value(|o| o.iter_mut().filter(|i| i.key == item.key).for_each(|i| i.bubble = bubble.id));
        }
    }
}

/// The first queued message, if any.
pub fn first(chat: Chat) -> Option<Outgoing> {
    chat.outbox.with_value(|o| o.first().cloned())
}

/// The bubble that shows the message with `key`.
pub fn bubble_of(chat: Chat, key: &str) -> Option<Bubble> {
    let id = chat.outbox.with_value(|o| o.iter().find(|i| i.key == key).map(|i| i.bubble))?;
    chat.bubbles.with_untracked(|b| b.iter().find(|b| b.id == id).copied())
}

/// Says where the message with `key` stands (`None`: taken).
pub fn mark(chat: Chat, key: &str, delivery: Option<Delivery>) {
    if let Some(bubble) = bubble_of(chat, key) {
        bubble.state.update(|s| s.delivery = delivery);
    }
}

/// Takes a message out of the queue: the server has it (or refused it).
pub fn forget(chat: Chat, key: &str) {
    chat.outbox.update_value(|o| o.retain(|i| i.key != key));
    save(chat);
}

/// The queue as kept in storage: `{"items": [{"key", "text", "files"}]}`.
fn save(chat: Chat) {
    let items = js_sys::Array::new();
    for item in chat.outbox.get_value() {
        items.push(&js::object(&[
            ("key", JsValue::from_str(&item.key)),
            ("text", JsValue::from_str(&item.text)),
            ("files", JsValue::from_str(&item.files)),
        ]));
    }
    js::keep_set("outbox", Some(&js::stringify(&js::object(&[("items", items.into())]))));
}

/// Takes the queue a reload left in storage.
pub fn load(chat: Chat) {
    let kept = js::keep_get("outbox").unwrap_or_default();
    let items = js::list(&js::parse(&kept), "items")
        .iter()
        .filter_map(|i| {
            let files = js::string(i, "files").unwrap_or_default();
            Some(Outgoing { key: js::string(i, "key")?, text: js::string(i, "text")?, files, bubble: 0 })
        })
        .collect();
    chat.outbox.set_value(items);
}
