//! Embed mode's bus (caddie-tool-contract-ct1.md §9): the space framed in
//! the hub's project page talks to the hub with `postMessage`
//! `{type: 'caddie-embed', v: 1, event, …}` — sent to the hub's origin
//! only, and heard only from that origin and from our parent window.
//!
//! Tool → hub: `ready {height}`, `resize {height}` (the hub sizes the frame:
//! one scrollbar, the hub's), `title {text}`, `navigate {path}` (the open
//! conversation, opaque to the hub, echoed back in `restore`),
//! `status-changed` (after a turn or an applied change), `needs-auth` (the
//! session ended). Hub → tool: `init {viewport, theme}`, `restore {path}`.

use js_sys::{Object, Reflect};
use leptos::prelude::*;
use leptos::task::spawn_local;
use wasm_bindgen::prelude::*;
use wasm_bindgen::{JsCast, JsValue};

use super::bus::{self, post};
use super::{host_page, turns};
use crate::state::Chat;

/// The height the hub should give the frame: the widget's own, which does
/// not depend on the frame's (so sizing the frame never loops).
fn height() -> f64 {
    document().query_selector(".ca-widget").ok().flatten().map_or(0.0, |w| w.get_bounding_client_rect().height().ceil())
}

/// `/conversations/{id}` for an open conversation, `/` for a new one.
fn path_of(conversation: Option<&str>) -> String {
    conversation.map_or_else(|| "/".to_owned(), |id| format!("/conversations/{id}"))
}

/// The conversation id of a `restore` path, if it is one of ours.
fn conversation_of(path: &str) -> Option<&str> {
    let id = path.strip_prefix("/conversations/")?;
    (!id.is_empty() && id.len() <= 64 && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-'))
        .then_some(id)
}

/// A message from the hub (through the session's one listener: each
/// typed listener costs the WASM kilobytes): `init` and `restore`.
pub fn receive(chat: Chat, e: &web_sys::MessageEvent) {
    let from_parent = e.source().is_some_and(|s| Object::is(&s, &JsValue::from(window().parent().ok().flatten())));
    if Some(e.origin()) != bus::hub() || !from_parent {
        return;
    }
    let data = e.data();
    let text = |name: &str| Reflect::get(&data, &name.into()).ok().and_then(|v| v.as_string());
    let version = Reflect::get(&data, &"v".into()).ok().and_then(|v| v.as_f64());
    if text("type").as_deref() != Some("caddie-embed") || version != Some(1.0) {
        return;
    }
    match text("event").as_deref() {
        Some("init") => init(&data),
        Some("restore") => {
            if let Some(path) = text("path") {
                restore(chat, &path);
            }
        }
        _ => {}
    }
}

/// Starts the bus with the hub at `hub` (an origin).
pub fn start(chat: Chat, hub: String, title: String) {
    bus::connect(hub);
    post("ready", &[("height", height().into())]);
    post("title", &[("text", title.into())]);
    watch_height();
    // The open conversation, for the hub to give back in `restore`.
    Effect::new(move |previous: Option<Option<String>>| {
        let id = chat.conversation_id.get();
        let changed = match &previous {
            Some(before) => *before != id,
            None => id.is_some(),
        };
        if changed {
            post("navigate", &[("path", path_of(id.as_deref()).into())]);
        }
        id
    });
}

/// `resize {height}` whenever the widget's height changes.
fn watch_height() {
    let last = std::cell::Cell::new(height());
    let changed = Closure::<dyn Fn()>::new(move || {
        let now = height();
        if now != last.get() {
            last.set(now);
            post("resize", &[("height", now.into())]);
        }
    });
    if let (Ok(observer), Some(widget)) = (
        web_sys::ResizeObserver::new(changed.as_ref().unchecked_ref()),
        document().query_selector(".ca-widget").ok().flatten(),
    ) {
        observer.observe(&widget);
        // Lives as long as the page.
        std::mem::forget(observer);
    }
    changed.forget();
}

/// `init {viewport, theme}`: the hub's theme, and a frame at least as tall
/// as the hub's viewport when there is little to show.
fn init(data: &JsValue) {
    let root = document().document_element();
    if let Some(theme) = Reflect::get(data, &"theme".into()).ok().and_then(|v| v.as_string())
        && matches!(theme.as_str(), "light" | "dark")
        && let Some(root) = &root
    {
        let _ = root.set_attribute("data-theme", &theme);
    }
    let viewport = Reflect::get(data, &"viewport".into()).unwrap_or(JsValue::UNDEFINED);
    let tall = Reflect::get(&viewport, &"height".into()).ok().and_then(|v| v.as_f64());
    if let (Some(tall), Some(root)) = (tall, root.and_then(|r| r.dyn_into::<web_sys::HtmlElement>().ok()))
        && tall.is_finite()
        && (200.0..=4000.0).contains(&tall)
    {
        // A whole number of pixels: formatting an `f64` would bring float printing into the WASM.
        let _ = root.style().set_property("--ca-embed-min-height", &format!("{}px", tall.round() as u32));
    }
}

/// `restore {path}`: opens the conversation the hub remembered, if it is
/// not the open one (the server checks it is this user's).
fn restore(chat: Chat, path: &str) {
    let Some(id) = conversation_of(path) else { return };
    if chat.busy.get_untracked() || chat.conversation_id.get_untracked().as_deref() == Some(id) {
        return;
    }
    host_page::remember_conversation(id);
    super::apps::teardown();
    chat.action.set(None);
    chat.error.set(None);
    chat.bubbles.set(Vec::new());
    chat.conversation_id.set(None);
    spawn_local(turns::restore(chat));
}

#[cfg(test)]
mod tests {
    use wasm_bindgen_test::wasm_bindgen_test;

    #[wasm_bindgen_test]
    fn restore_paths_are_only_our_conversations() {
        assert_eq!(super::conversation_of("/conversations/conv_1a2b"), Some("conv_1a2b"));
        assert_eq!(super::conversation_of("/conversations/"), None);
        assert_eq!(super::conversation_of("/conversations/../admin"), None);
        assert_eq!(super::conversation_of("https://evil.example/"), None);
        assert_eq!(super::path_of(Some("c1")), "/conversations/c1");
        assert_eq!(super::path_of(None), "/");
    }
}
