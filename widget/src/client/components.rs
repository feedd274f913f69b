//! A component's own buttons: run one of its declared tools and refresh
//! the components of its kind with the result.

use leptos::prelude::*;
use leptos::task::spawn_local;
use wasm_bindgen::JsValue;

use super::{WidgetError, api, token};
use crate::js;
use crate::state::{Arg, Chat};
use crate::wire::i18n::Msg;

pub fn call_component(
    chat: Chat,
    component_id: String,
    tool: &'static str,
    arguments: Vec<(&'static str, Arg)>,
    busy: RwSignal<bool>,
    error: RwSignal<Option<String>>,
) {
    let Some(token) = chat.token.get_untracked() else { return };
    busy.set(true);
    error.set(None);
    spawn_local(async move {
        let arguments: Vec<(&str, JsValue)> = arguments
            .into_iter()
            .map(|(k, v)| match v {
                Arg::Text(t) => (k, JsValue::from_str(&t)),
                Arg::Number(n) => (k, JsValue::from_f64(f64::from(n))),
            })
            .collect();
        let body =
            js::stringify(&js::object(&[("tool", JsValue::from_str(tool)), ("arguments", js::object(&arguments))]));
        let path = format!("/v1/components/{component_id}/call");
        let outcome = match api::call("POST", &path, &token, Some(body)).await {
            Ok(response) => {
                let component = js::get(&api::json_of(&response).await, "component");
                if let Some(kind) = js::string(&component, "kind") {
                    chat.refresh_kind(&kind, &js::stringify(&js::get(&component, "data")));
                    chat.announce.set(chat.t(Msg::OrderUpdated));
                }
                Ok(())
            }
            Err(WidgetError::Expired) => {
                token::renew(chat);
                Err(WidgetError::Expired.message(chat.words))
            }
            Err(other) => Err(other.message(chat.words)),
        };
        busy.set(false);
        if let Err(message) = outcome {
            error.set(Some(message));
        }
    });
}
