//! A turn's event stream (assistant-api.md §3), read event by event into
//! the chat (`js/dom.js` frames them from the response's bytes): each
//! event by its [`EventKind`], unknown ones ignored.

use leptos::prelude::*;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use web_sys::Response;

use super::{WidgetError, api, host_page};
use crate::js;
use crate::state::{Bubble, Chat};
use crate::wire::i18n::Msg;
use crate::wire::{EventKind, Role, ToolStatus};

/// How far a turn's stream got: the last event's id, and how it ended.
#[derive(Debug, Default)]
pub struct Progress {
    last_id: Option<String>,
    finished: bool,
    failure: Option<String>,
}

/// Tries to resume a lost stream this many times (waiting 0.5, 1, 2, 4 s).
const RECONNECTS: u32 = 4;

/// Reads a turn's stream into `reply` to its `done`; when the connection
/// is lost first, resumes it (`GET /v1/turns/{id}/events` after the last
/// event seen), showing that it is reconnecting, and the reply completes
/// in place. Only a stream that stays lost is a failure (with Retry).
pub async fn follow(chat: Chat, reply: Bubble, response: Response) -> Result<(), WidgetError> {
    let mut progress = Progress::default();
    let mut outcome = read(chat, reply, response, &mut progress).await;
    let mut attempt = 0;
    while matches!(outcome, Err(WidgetError::Lost)) && attempt < RECONNECTS {
        let (Some(turn), Some(token)) = (chat.turn_id.get_untracked(), chat.token.get_untracked()) else { break };
        chat.activity.set(Some(chat.t(Msg::Reconnecting)));
        sleep(500 * 2_i32.pow(attempt)).await;
        attempt += 1;
        let path = format!("/v1/turns/{turn}/events");
        let last = progress.last_id.clone();
        match api::call_with("GET", &path, &token, None, last.as_deref().map(|l| ("Last-Event-ID", l))).await {
            Ok(response) => {
                chat.activity.set(None);
                outcome = read(chat, reply, response, &mut progress).await;
            }
            // Still offline, or the server is restarting: try again.
            Err(WidgetError::Unreachable) => {}
            Err(_) => break,
        }
    }
    chat.activity.set(None);
    outcome
}

/// Waits `ms` milliseconds (a browser timer).
pub async fn sleep(ms: i32) {
    let promise = js_sys::Promise::new(&mut |resolve, _| {
        let _ = window().set_timeout_with_callback_and_timeout_and_arguments_0(&resolve, ms);
    });
    let _ = JsFuture::from(promise).await;
}

/// Reads one stream of the turn's events into `reply`, noting how far it got.
async fn read(chat: Chat, reply: Bubble, response: Response, progress: &mut Progress) -> Result<(), WidgetError> {
    let body = response.body().ok_or(WidgetError::NoBody)?;
    let events = js::events(&body);
    loop {
        let event = JsFuture::from(events.next()).await.map_err(|_| WidgetError::Lost)?;
        if event.is_null() {
            break;
        }
        if let Some(id) = js::string(&event, "id") {
            progress.last_id = Some(id);
        }
        let Some(kind) = js::string(&event, "event").as_deref().and_then(EventKind::parse) else { continue };
        let data = js::get(&event, "data");
        match kind {
            EventKind::Error => progress.failure = js::string(&data, "message").or(progress.failure.take()),
            EventKind::Done => {
                let reason = js::string(&data, "stop_reason");
                reply.state.update(|s| s.stopped = reason.as_deref() == Some("cancelled"));
                progress.finished |= reason.is_some();
            }
            _ => apply(chat, reply, kind, &data),
        }
    }
    if let Some(message) = progress.failure.clone() {
        return Err(WidgetError::Turn(message));
    }
    if !progress.finished {
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
                let status = ToolStatus::parse(&status);
                let running = matches!(status, Some(ToolStatus::Started | ToolStatus::Progress));
                let progress = progress_of(data);
                // A call that ended waits for no answer any more.
                let call = js::string(data, "call_id");
                if !running
                    && chat
                        .elicitation
                        .with_untracked(|e| e.as_ref().is_some_and(|e| Some(&e.call_id) == call.as_ref()))
                {
                    chat.elicitation.set(None);
                }
                chat.activity.set(running.then(|| {
                    let running = chat.words.fill(Msg::Running, "{tool}", &name.replace('_', " "));
                    if progress.is_empty() { running } else { format!("{running} {progress}") }
                }));
            }
        }
        EventKind::Elicitation => {
            if let Some(request) = js::elicitation(data) {
                chat.elicitation_error.set(None);
                chat.elicitation.set(Some(request));
                chat.announce.set(chat.t(Msg::ElicitTitle));
                focus_by_id("ca-elicit");
            }
        }
        EventKind::Display => {
            let cards = js::cards(data, "cards");
            reply.state.update(|s| s.cards.extend(cards));
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
                reply.state.update(|s| {
                    s.message_id = Some(id);
                    s.html = Some(html);
                });
            }
        }
        EventKind::PendingAction => {
            if let Some(action) = js::pending_action(data) {
                chat.action_error.set(None);
                chat.action.set(Some(action));
                chat.announce.set(chat.t(Msg::NeedsApproval));
                focus_action_card();
            }
        }
        EventKind::Error | EventKind::Done => {}
    }
}

/// How far a tool is, from a `progress` event: "(40%)" when it knows its
/// total, then what it says it is doing.
fn progress_of(data: &JsValue) -> String {
    let progress = js::get(data, "progress").as_f64();
    let total = js::get(data, "total").as_f64().filter(|t| *t > 0.0);
    let mut said = match (progress, total) {
        (Some(p), Some(t)) => format!("({}%)", ((p / t) * 100.0).clamp(0.0, 100.0).round() as u32),
        _ => String::new(),
    };
    if let Some(message) = js::string(data, "message").filter(|m| !m.trim().is_empty()) {
        if !said.is_empty() {
            said.push(' ');
        }
        said.push_str(&message);
    }
    said
}

/// Moves keyboard focus to the element `id` once it is drawn.
pub fn focus_by_id(id: &'static str) {
    request_animation_frame(move || {
        if let Some(element) = document().get_element_by_id(id)
            && let Ok(element) = element.dyn_into::<web_sys::HtmlElement>()
        {
            let _ = element.focus();
        }
    });
}

/// Moves keyboard focus to the composer once the view has settled: after
/// the action card is answered and gone, focus is where the user goes on.
pub fn focus_composer() {
    request_animation_frame(|| {
        if let Some(input) = document().get_element_by_id("ca-input")
            && let Ok(input) = input.dyn_into::<web_sys::HtmlElement>()
        {
            let _ = input.focus();
        }
    });
}

/// Moves keyboard focus to the chat error's Retry once it is drawn.
pub fn focus_retry() {
    request_animation_frame(|| {
        if let Some(button) = document().query_selector(".ca-error .ca-retry").ok().flatten()
            && let Ok(button) = button.dyn_into::<web_sys::HtmlElement>()
        {
            let _ = button.focus();
        }
    });
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
