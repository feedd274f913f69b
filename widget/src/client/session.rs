//! The widget's session with the host page: it says it is ready, takes the
//! token the page hands over (`ca:token`, from the page's own origin or an
//! allowed one only, with what the loader kept), opens what was kept for
//! the token's user and restores the conversation with the first token,
//! and sends again a message that an expired token held back.

use js_sys::{Object, Reflect};
use leptos::prelude::*;
use leptos::task::spawn_local;
use wasm_bindgen::{JsCast, JsValue};

use super::{host_page, outbox, token, turns};
use crate::state::Chat;
use crate::wire::WidgetBoot;
use crate::wire::i18n::Msg;

/// Listens for the host page's token and tells it the frame is ready.
pub fn start(chat: Chat, boot: WidgetBoot) {
    token::set_receiver(receive);
    let own_origin = window().location().origin().unwrap_or_default();
    let allowed = boot.allowed_origins.clone();
    let on_message = move |e: &web_sys::MessageEvent| {
        accept(chat, &own_origin, &allowed, e);
        // Inside the hub's frame, its bus (`embed`) hears the same listener.
        super::embed::receive(chat, e);
    };
    // What the page's first script kept while the WASM was on its way (the
    // host hands the token over as soon as the frame has loaded: shell):
    // taken once the page is hydrated, before any later message.
    let early = on_message.clone();
    spawn_local(async move {
        let kept = Reflect::get(&window(), &JsValue::from_str("caEarly")).ok();
        let _ = Reflect::set(&window(), &JsValue::from_str("caEarly"), &JsValue::NULL);
        for e in kept.and_then(|k| k.dyn_into::<js_sys::Array>().ok()).iter().flat_map(|k| k.iter()) {
            if let Ok(e) = e.dyn_into::<web_sys::MessageEvent>() {
                early(&e);
            }
        }
    });
    let handle = window_event_listener(leptos::ev::message, move |e: web_sys::MessageEvent| on_message(&e));
    on_cleanup(move || handle.remove());
    turns::watch(chat);
    // The full-page app (launched from Caddie) has its token from the page.
    if let Some(token) = &boot.token {
        crate::js::set_global("caToken", token);
        crate::js::keep_token(&boot.workspace_id, token);
        take_kept(chat);
        spawn_local(turns::restore(chat));
    } else {
        host_page::post_to_host("ca:ready");
    }
}

/// What was kept for the token's user: queued messages survive a reload;
/// without a network, the last conversation shows as it was kept, marked
/// offline. Nothing is shown before a token says whose it is.
fn take_kept(chat: Chat) {
    outbox::load(chat);
    if !outbox::online()
        && let Some(id) = host_page::remembered_conversation()
    {
        turns::show_offline(chat, &id);
        outbox::show_queued(chat);
    }
}

/// A message from the page that frames the widget, from its own origin or
/// an allowed one: focus the field, or take a token.
fn accept(chat: Chat, own_origin: &str, allowed: &[String], e: &web_sys::MessageEvent) {
    let origin = e.origin();
    let from_parent =
        e.source().map(|s| Object::is(&s, &JsValue::from(window().parent().ok().flatten()))).unwrap_or(false);
    if !from_parent || (origin != own_origin && !allowed.contains(&origin)) {
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
            // What the loader kept in the host page for the widget, if the
            // frame's own storage is refused: it goes back to this origin.
            crate::js::set_global("caKept", &field(&data, "kept").unwrap_or_default());
            crate::js::set_global("caHost", &origin);
            receive(chat, token);
        }
        _ => {}
    }
}

fn field(data: &JsValue, name: &str) -> Option<String> {
    Reflect::get(data, &JsValue::from_str(name)).ok().and_then(|v| v.as_string())
}

/// A token arrived (from the host page, or the server for the full-page
/// app): the first one restores the conversation; a message refused for an
/// expired token goes again with a new one, and the same token again means
/// there is no fresher one.
fn receive(chat: Chat, token: String) {
    // Another user's token: what the last one kept is dropped, and the
    // frame starts again for the new one (its queue is never sent as them).
    if crate::js::keep_token(&super::boot::workspace_id(), &token) {
        return;
    }
    let previous = chat.token.get_untracked();
    let renewed = previous.as_deref() != Some(token.as_str());
    // The attachments code uploads with it.
    crate::js::set_global("caToken", &token);
    chat.token.set(Some(token));
    if previous.is_none() {
        take_kept(chat);
        super::mark("ca:token");
        // The composer is drawn connected at the next frame.
        request_animation_frame(|| super::mark("ca:interactive"));
        spawn_local(turns::restore(chat));
    }
    if token::take_retry() {
        chat.activity.set(None);
        if !renewed {
            // No fresher token: the message waits for Retry, its text kept.
            turns::hold(chat);
            chat.error.set(Some(chat.t(Msg::SessionEnded)));
        }
    }
    // Queued messages go with the token (once the conversation is known).
    turns::pump(chat);
}
