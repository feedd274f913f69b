//! The embed token: the boot data the page carries, the hand-off with the
//! host page (`ca:ready` → `ca:token`), and renewal when a call answers
//! `401` — from the host page, or for the full-page app from the server.

use js_sys::{Object, Reflect};
use leptos::prelude::*;
use leptos::task::spawn_local;
use wasm_bindgen::{JsCast, JsValue};

use super::{api, host_page, turns};
use crate::js;
use crate::state::Chat;
use crate::wire::WidgetBoot;

thread_local! {
    static BOOT: std::cell::RefCell<WidgetBoot> = Default::default();
    /// A message to send again once the host hands over a fresh token.
    static RETRY: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
}

/// The boot data the server rendered into `<meta name="ca-boot">`.
pub fn read_boot() -> WidgetBoot {
    let boot = document()
        .query_selector("meta[name=ca-boot]")
        .ok()
        .flatten()
        .and_then(|m| m.get_attribute("content"))
        .and_then(|json| js::boot(&js::parse(&json)))
        .unwrap_or_default();
    BOOT.with(|b| *b.borrow_mut() = boot.clone());
    boot
}

/// The workspace this widget belongs to.
pub fn workspace_id() -> String {
    BOOT.with(|b| b.borrow().workspace_id.clone())
}

/// Listens for the host page's token and tells it the frame is ready.
pub fn start(chat: Chat, boot: WidgetBoot) {
    let own_origin = window().location().origin().unwrap_or_default();
    let handle = window_event_listener(leptos::ev::message, move |e: web_sys::MessageEvent| {
        let origin = e.origin();
        let from_parent =
            e.source().map(|s| Object::is(&s, &JsValue::from(window().parent().ok().flatten()))).unwrap_or(false);
        if !from_parent || (origin != own_origin && !boot.allowed_origins.contains(&origin)) {
            return;
        }
        let data = e.data();
        match field(&data, "type").as_deref() {
            Some("ca:focus") => {
                if let Some(input) = document().get_element_by_id("ca-input")
                    && let Ok(input) = input.dyn_into::<web_sys::HtmlElement>()
                {
                    let _ = input.focus();
                }
            }
            Some("ca:token") => {
                let Some(token) = field(&data, "token").filter(|t| !t.is_empty() && t.len() < 8192) else { return };
                receive(chat, token);
            }
            _ => {}
        }
    });
    on_cleanup(move || handle.remove());
    // The full-page app (launched from Caddie) has its token from the page.
    if boot.token.is_some() {
        spawn_local(turns::restore(chat));
    } else {
        host_page::post_to_host("ca:ready");
    }
}

fn field(data: &JsValue, name: &str) -> Option<String> {
    Reflect::get(data, &JsValue::from_str(name)).ok().and_then(|v| v.as_string())
}

/// Keeps `text` to send again once a fresh token arrives.
pub fn retry_after_renewal(chat: Chat, text: String) {
    RETRY.with(|r| *r.borrow_mut() = Some(text));
    chat.activity.set(Some("Reconnecting…".into()));
    renew(chat);
}

/// A token arrived (from the host page, or the server for the full-page
/// app): the first one restores the conversation; a message refused for an
/// expired token goes again with a new one, and the same token again means
/// there is no fresher one.
fn receive(chat: Chat, token: String) {
    let previous = chat.token.get_untracked();
    let renewed = previous.as_deref() != Some(token.as_str());
    chat.token.set(Some(token));
    if previous.is_none() {
        spawn_local(turns::restore(chat));
    }
    if let Some(text) = RETRY.with(|r| r.borrow_mut().take()) {
        chat.activity.set(None);
        if renewed {
            turns::send(chat, text);
        } else {
            chat.last_sent.set(Some(text));
            chat.error.set(Some("Your session has expired. Reload the page to continue.".into()));
        }
    }
}

/// Asks for a fresh token: from the host page, or — full page — from the
/// server, with the session cookie.
pub fn renew(chat: Chat) {
    let full_page = BOOT.with(|b| b.borrow().token.is_some());
    if !full_page {
        host_page::post_to_host("ca:token-expired");
        return;
    }
    let path = format!("/caddie/api/spaces/{}/token", workspace_id());
    spawn_local(async move {
        let fresh = match api::send("POST", &path, None, None).await {
            Ok(r) if r.status() == 200 => js::string(&api::json_of(&r).await, "token"),
            _ => None,
        };
        // None: the session ended; the same token again reports it.
        let token = fresh.or_else(|| chat.token.get_untracked()).unwrap_or_default();
        receive(chat, token);
    });
}
