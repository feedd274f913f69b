//! The sending half of embed mode's bus (caddie-tool-contract-ct1.md §9):
//! `{type: 'caddie-embed', v: 1, event, …}` to the hub's origin only, once
//! `embed` has connected it. A leaf: the chat's flows (turns, token,
//! host_page) say what happened here without knowing the rest of the bus.

use std::cell::RefCell;

use js_sys::{Object, Reflect};
use leptos::prelude::*;
use wasm_bindgen::JsValue;

thread_local! {
    /// The hub's origin, once the bus is started.
    static HUB: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Talks to the hub at `hub` (an origin) from now on.
pub fn connect(hub: String) {
    HUB.with(|h| *h.borrow_mut() = Some(hub));
}

/// True inside the hub's frame.
pub fn active() -> bool {
    HUB.with(|h| h.borrow().is_some())
}

/// The hub's origin, inside its frame.
pub fn hub() -> Option<String> {
    HUB.with(|h| h.borrow().clone())
}

/// Sends `event` with `fields` to the hub (inside its frame only).
pub fn post(event: &str, fields: &[(&str, JsValue)]) {
    let Some(hub) = hub() else { return };
    let Ok(Some(parent)) = window().parent() else { return };
    let message = Object::new();
    let _ = Reflect::set(&message, &"type".into(), &"caddie-embed".into());
    let _ = Reflect::set(&message, &"v".into(), &1.into());
    let _ = Reflect::set(&message, &"event".into(), &event.into());
    for (key, value) in fields {
        let _ = Reflect::set(&message, &(*key).into(), value);
    }
    let _ = parent.post_message(&message, &hub);
}

/// After a turn or an applied change: the hub may look at the status again.
pub fn status_changed() {
    post("status-changed", &[]);
}

/// The session ended: the hub may relaunch the tool.
pub fn needs_auth() {
    post("needs-auth", &[]);
}
