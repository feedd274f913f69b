//! A turn's event stream (assistant-api.md §3), read chunk by chunk into
//! the chat: each event by its [`EventKind`], unknown ones ignored.

use js_sys::{Reflect, Uint8Array};
use leptos::prelude::*;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use web_sys::{ReadableStreamDefaultReader, Response};

use super::{WidgetError, host_page};
use crate::js;
use crate::sse::SseParser;
use crate::state::{Bubble, Chat};
use crate::wire::{EventKind, Role, ToolStatus};

/// Reads a turn's event stream into `reply`, to its `done`.
pub async fn read(chat: Chat, reply: Bubble, response: Response) -> Result<(), WidgetError> {
    let body = response.body().ok_or(WidgetError::NoBody)?;
    let reader: ReadableStreamDefaultReader = body.get_reader().unchecked_into();
    let mut parser = SseParser::default();
    let mut finished = false;
    let mut failure: Option<String> = None;
    loop {
        let chunk = JsFuture::from(reader.read()).await.map_err(|_| WidgetError::Lost)?;
        if Reflect::get(&chunk, &"done".into()).ok().and_then(|d| d.as_bool()).unwrap_or(true) {
            break;
        }
        let bytes = Reflect::get(&chunk, &"value".into()).map_err(|_| WidgetError::Lost)?;
        for event in parser.feed(&Uint8Array::new(&bytes).to_vec()) {
            let Some(kind) = EventKind::parse(&event.event) else { continue };
            let data = js::parse(&event.data);
            match kind {
                EventKind::Error => failure = js::string(&data, "message").or(failure),
                EventKind::Done => finished |= js::string(&data, "stop_reason").is_some(),
                _ => apply(chat, reply, kind, &data),
            }
        }
    }
    if let Some(message) = failure {
        return Err(WidgetError::Turn(message));
    }
    if !finished {
        return Err(WidgetError::Lost);
    }
    Ok(())
}

/// What one event changes on screen.
fn apply(chat: Chat, reply: Bubble, kind: EventKind, data: &JsValue) {
    match kind {
        EventKind::Turn => {
            if let (Some(conversation), Some(turn)) = (js::string(data, "conversation_id"), js::string(data, "turn_id"))
            {
                host_page::remember_conversation(&conversation);
                chat.conversation_id.set(Some(conversation));
                chat.turn_id.set(Some(turn));
            }
        }
        EventKind::Text => {
            if let Some(delta) = js::string(data, "delta") {
                reply.text.update(|t| t.push_str(&delta));
            }
        }
        EventKind::Tool => {
            if let (Some(name), Some(status)) = (js::string(data, "name"), js::string(data, "status")) {
                let started = ToolStatus::parse(&status) == Some(ToolStatus::Started);
                chat.activity.set(started.then(|| format!("Running {}…", name.replace('_', " "))));
            }
        }
        EventKind::Display => {
            let cards = js::cards(data, "cards");
            reply.cards.update(|c| c.extend(cards));
        }
        EventKind::Component => {
            if let (Some(id), Some(kind)) = (js::string(data, "component_id"), js::string(data, "kind")) {
                let update = js::boolean(data, "update").unwrap_or(false);
                chat.show_component(reply, id, kind, js::stringify(&js::get(data, "data")), update);
            }
        }
        EventKind::Message => {
            if let (Some(id), Some(text), Some(html)) =
                (js::string(data, "message_id"), js::string(data, "text"), js::string(data, "html"))
            {
                host_page::post_message_event(Role::Assistant, Some(&id));
                reply.text.set(text);
                reply.html.set(Some(html));
            }
        }
        EventKind::PendingAction => {
            if let Some(action) = js::pending_action(data) {
                chat.action_error.set(None);
                chat.action.set(Some(action));
                chat.announce.set("The assistant needs your approval before it changes anything.".into());
                focus_action_card();
            }
        }
        EventKind::Error | EventKind::Done => {}
    }
}

/// Moves keyboard focus to the action card once it is drawn.
pub fn focus_action_card() {
    request_animation_frame(|| {
        if let Some(card) = document().get_element_by_id("ca-action")
            && let Ok(card) = card.dyn_into::<web_sys::HtmlElement>()
        {
            let _ = card.focus();
        }
    });
}
