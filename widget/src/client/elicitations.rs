//! Answering a tool's question (`POST /v1/elicitations/{id}`): Send reads
//! the form's values, typed as the fields say, once the browser finds them
//! valid; Decline and Cancel send no values. The question goes away once
//! answered; a refusal says why beside it.

use leptos::prelude::*;
use leptos::task::spawn_local;
use wasm_bindgen::{JsCast, JsValue};

use super::{WidgetError, api, stream, token};
use crate::js;
use crate::state::Chat;
use crate::wire::ElicitAction;
use crate::wire::i18n::Msg;

pub fn answer(chat: Chat, action: ElicitAction) {
    let (Some(request), Some(token)) = (chat.elicitation.get_untracked(), chat.token.get_untracked()) else { return };
    let content = if action == ElicitAction::Accept {
        match values() {
            Some(content) => Some(content),
            // The browser says what is missing or wrong, at the field.
            None => return,
        }
    } else {
        None
    };
    chat.elicitation_busy.set(true);
    chat.elicitation_error.set(None);
    spawn_local(async move {
        let mut body = vec![("action", JsValue::from_str(action.as_str()))];
        if let Some(content) = content {
            body.push(("content", content));
        }
        let path = format!("/v1/elicitations/{}", request.elicitation_id);
        let outcome = api::call("POST", &path, &token, Some(js::stringify(&js::object(&body)))).await;
        chat.elicitation_busy.set(false);
        match outcome {
            Ok(_) => {
                chat.elicitation.set(None);
                stream::focus_composer();
            }
            Err(WidgetError::Expired) => {
                token::renew(chat);
                chat.elicitation_error.set(Some(chat.t(Msg::ElicitFailed)));
            }
            Err(error) if matches!(error.code(), Some("elicitation_answered")) || error.is_not_found() => {
                chat.elicitation.set(None);
                chat.error.set(Some(chat.t(Msg::ElicitGone)));
            }
            Err(_) => chat.elicitation_error.set(Some(chat.t(Msg::ElicitFailed))),
        }
    });
}

/// The form's values by field name (each control's `data-name`), typed by
/// its `data-kind`; `None` (the browser showing why) while the form is not
/// valid.
fn values() -> Option<JsValue> {
    let form = document().get_element_by_id("ca-elicit-form")?.dyn_into::<web_sys::HtmlFormElement>().ok()?;
    if !form.report_validity() {
        return None;
    }
    let content = js_sys::Object::new();
    let controls = form.query_selector_all("[data-name]").ok()?;
    for control in (0..controls.length()).filter_map(|i| controls.item(i)?.dyn_into::<web_sys::Element>().ok()) {
        let (Some(name), Some(kind)) = (control.get_attribute("data-name"), control.get_attribute("data-kind")) else {
            continue;
        };
        let value: JsValue = match kind.as_str() {
            // The chosen options, in the form's order.
            "choices" => {
                let chosen = js_sys::Array::new();
                let options = control.query_selector_all("option:checked").ok()?;
                for option in (0..options.length()).filter_map(|i| options.item(i)?.dyn_into::<web_sys::Element>().ok())
                {
                    chosen.push(&JsValue::from_str(&option.get_attribute("value").unwrap_or_default()));
                }
                if chosen.length() == 0 && !control.has_attribute("required") {
                    continue;
                }
                chosen.into()
            }
            "boolean" => JsValue::from_bool(control.dyn_into::<web_sys::HtmlInputElement>().ok()?.checked()),
            _ => {
                let text = js_sys::Reflect::get(&control, &"value".into()).ok()?.as_string().unwrap_or_default();
                if text.is_empty() {
                    continue;
                }
                match kind.as_str() {
                    // The browser parses (Rust's float parsing would weigh on the WASM).
                    "number" | "integer" => JsValue::from_f64(js_sys::Number::parse_float(&text)),
                    // A local date and time, as the server wants it: RFC 3339.
                    _ if control.get_attribute("data-format").as_deref() == Some("date-time") => {
                        js_sys::Date::new(&JsValue::from_str(&text)).to_iso_string().into()
                    }
                    _ => JsValue::from_str(&text),
                }
            }
        };
        let _ = js_sys::Reflect::set(&content, &JsValue::from_str(&name), &value);
    }
    Some(content.into())
}
