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
use crate::wire::i18n::Msg;
use crate::wire::{ElicitAction, ElicitationRequest, FieldKind};

pub fn answer(chat: Chat, action: ElicitAction) {
    let (Some(request), Some(token)) = (chat.elicitation.get_untracked(), chat.token.get_untracked()) else { return };
    let content = if action == ElicitAction::Accept {
        match values(&request) {
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

/// The form's values by field name, typed; `None` (the browser showing
/// why) while the form is not valid.
fn values(request: &ElicitationRequest) -> Option<JsValue> {
    let document = leptos::prelude::document();
    let form = document.get_element_by_id("ca-elicit-form")?.dyn_into::<web_sys::HtmlFormElement>().ok()?;
    if !form.report_validity() {
        return None;
    }
    let mut fields = Vec::new();
    for (i, field) in request.fields.iter().enumerate() {
        let element = document.get_element_by_id(&format!("ca-f-{i}"))?;
        let value = if field.kind == FieldKind::Choice {
            element.dyn_into::<web_sys::HtmlSelectElement>().ok()?.value()
        } else {
            let input = element.dyn_into::<web_sys::HtmlInputElement>().ok()?;
            if field.kind == FieldKind::Boolean {
                fields.push((field.name.as_str(), JsValue::from_bool(input.checked())));
                continue;
            }
            input.value()
        };
        if value.is_empty() {
            continue;
        }
        let typed = match field.kind {
            FieldKind::Number | FieldKind::Integer => JsValue::from_f64(value.parse::<f64>().ok()?),
            // A local date and time, as the server wants it: RFC 3339.
            FieldKind::Text if field.format.as_deref() == Some("date-time") => {
                js_sys::Date::new(&JsValue::from_str(&value)).to_iso_string().into()
            }
            _ => JsValue::from_str(&value),
        };
        fields.push((field.name.as_str(), typed));
    }
    Some(js::object(&fields))
}
