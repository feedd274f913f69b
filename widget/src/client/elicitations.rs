//! Answering a tool's question (`POST /v1/elicitations/{id}`): Send reads
//! the form's values, typed as the fields say, once the browser finds them
//! valid; Decline and Cancel send no values. The question goes away once
//! answered; a refusal says why beside it.

use leptos::prelude::*;
use leptos::task::spawn_local;
use wasm_bindgen::JsValue;

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

/// The form's values by field name, typed as its fields say (`js/dom.js`);
/// `None` (the browser showing why) while the form is not valid.
fn values() -> Option<JsValue> {
    let values = js::form_values(&document().get_element_by_id("ca-elicit-form")?);
    (!values.is_undefined()).then_some(values)
}
