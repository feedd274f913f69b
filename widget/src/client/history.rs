//! The user's earlier conversations: their list (`GET /v1/conversations`),
//! each last-active time in the visitor's locale, and going back to one.

use leptos::prelude::*;
use leptos::task::spawn_local;
use wasm_bindgen::{JsCast, JsValue};

use super::{WidgetError, api, boot, host_page, stream, token, turns};
use crate::html::escape;
use crate::js;
use crate::state::Chat;
use crate::wire::i18n::Msg;

/// How the visitor's language writes a date and time (through `Intl`).
fn local_format() -> js_sys::Function {
    let options = js::object(&[("dateStyle", JsValue::from_str("medium")), ("timeStyle", JsValue::from_str("short"))]);
    js_sys::Intl::DateTimeFormat::new(&boot::locales(), options.unchecked_ref()).format()
}

/// A time (ms since the epoch) written by `format`.
fn local_time(format: &js_sys::Function, ms: f64) -> String {
    format
        .call1(&JsValue::NULL, &js_sys::Date::new(&JsValue::from_f64(ms)))
        .ok()
        .and_then(|s| s.as_string())
        .unwrap_or_default()
}

/// Fetches the list and opens it (empty when there is none yet).
pub fn show(chat: Chat) {
    let Some(token) = chat.token.get_untracked() else { return };
    spawn_local(async move {
        let response = match api::call("GET", "/v1/conversations", &token, None).await {
            Ok(response) => response,
            Err(WidgetError::Expired) => return token::renew(chat),
            Err(error) => return chat.error.set(Some(error.message(chat.words))),
        };
        let list = api::json_of(&response).await;
        // One escaped string, clicked through `data-id`: a view per item
        // would cost the WASM far more.
        let format = local_format();
        let items: String = js::list(&list, "conversations")
            .iter()
            .filter_map(|c| {
                let id = js::string(c, "id")?;
                let when = local_time(&format, js::get(c, "updated_at").as_f64().unwrap_or(0.0));
                Some(format!(
                    "<li><button type=\"button\" class=\"ca-history-item\" data-action=\"open\" data-id=\"{}\">\
                     <span class=\"ca-history-name\">{}</span><span class=\"ca-history-when\">{}</span></button></li>",
                    escape(&id),
                    escape(&js::string(c, "title").unwrap_or_default()),
                    escape(&when)
                ))
            })
            .collect();
        chat.history.set(Some(items));
    });
}

/// Shows conversation `id` in place of the current one, and remembers it
/// as the one a reload brings back.
pub fn open(chat: Chat, id: String) {
    chat.history.set(None);
    if chat.conversation_id.get_untracked().as_deref() == Some(id.as_str()) {
        return;
    }
    super::apps::teardown();
    chat.action.set(None);
    chat.error.set(None);
    chat.bubbles.set(Vec::new());
    host_page::remember_conversation(&id);
    spawn_local(async move {
        turns::restore(chat).await;
        chat.announce.set(chat.t(Msg::HistoryOpened));
    });
    // Back in the chat: where the user types next.
    stream::focus_composer();
}
