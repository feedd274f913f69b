//! What the widget tells the page around it, and what it keeps in the
//! browser: `postMessage` to the host page (never anything secret), the
//! conversation id and its copy for reading offline (kept for the token's
//! subject: `js/dom.js` `keepToken`), and the Caddie bar's launch context.

use js_sys::{Object, Reflect};
use leptos::prelude::*;
use leptos::task::spawn_local;
use wasm_bindgen::JsValue;

use super::api;
use crate::js;
use crate::wire::{CaddieBar, Role};

/// Sends `{type}` to the host page. It carries nothing secret, so any
/// origin may receive it; the host's loader checks that it came from us.
pub fn post_to_host(kind: &str) {
    post_with_detail(kind, None);
}

/// Tells the host page's `message` hook that a message was sent or
/// finished: its role and id only, never its text (any origin may hear it).
pub fn post_message_event(role: Role, message_id: Option<&str>) {
    let detail = Object::new();
    let _ = Reflect::set(&detail, &"role".into(), &role.as_str().into());
    if let Some(id) = message_id {
        let _ = Reflect::set(&detail, &"message_id".into(), &id.into());
    }
    post_with_detail("ca:message", Some(detail));
}

fn post_with_detail(kind: &str, detail: Option<Object>) {
    // Inside the hub's frame the hub hears the `caddie-embed` bus only.
    if super::bus::active() {
        return;
    }
    let Ok(Some(parent)) = window().parent() else { return };
    let message = Object::new();
    let _ = Reflect::set(&message, &"type".into(), &kind.into());
    if let Some(detail) = detail {
        let _ = Reflect::set(&message, &"detail".into(), &detail);
    }
    let _ = parent.post_message(&message, "*");
}

/// The conversation to restore after a reload, if one was remembered.
pub fn remembered_conversation() -> Option<String> {
    js::keep_get("conversation")
}

pub fn remember_conversation(id: &str) {
    js::keep_set("conversation", Some(id));
}

pub fn forget_conversation() {
    js::keep_set("conversation", None);
    js::keep_set("view", None);
}

/// Keeps the conversation as the server showed it (`GET
/// /v1/conversations/{id}`'s body), for reading offline.
pub fn keep_view(text: &str) {
    js::keep_set("view", Some(text));
}

/// The conversation kept for reading offline, if it is `id`'s.
pub fn kept_view(id: &str) -> Option<JsValue> {
    let view = js::parse(&js::keep_get("view")?);
    (js::string(&view, "id").as_deref() == Some(id)).then_some(view)
}

/// The host bar's context (§6): `cctx` moves from the URL into what is
/// kept for the signed-in user (and out of the address bar); while the
/// server still knows it, `GET /caddie/api/context/{ctx}` refreshes the
/// bar. Otherwise the bar keeps what the server rendered from the space's
/// link.
pub fn caddie_context(bar: RwSignal<CaddieBar>) {
    let location = window().location();
    if let Ok(params) = web_sys::UrlSearchParams::new_with_str(&location.search().unwrap_or_default())
        && let Some(ctx) = params.get("cctx")
    {
        js::keep_set("cctx", Some(&ctx));
        params.delete("cctx");
        params.delete("tour");
        let rest = String::from(params.to_string());
        let path = location.pathname().unwrap_or_default();
        let clean = if rest.is_empty() { path } else { format!("{path}?{rest}") };
        if let Ok(history) = window().history() {
            let _ = history.replace_state_with_url(&JsValue::NULL, "", Some(&clean));
        }
    }
    let Some(ctx) = js::keep_get("cctx") else { return };
    if ctx.len() != 32 || !ctx.bytes().all(|b| b.is_ascii_hexdigit()) {
        return;
    }
    spawn_local(async move {
        let Ok(response) = api::send("GET", &format!("/caddie/api/context/{ctx}"), None, None).await else { return };
        if response.status() != 200 {
            js::keep_set("cctx", None);
            return;
        }
        if let Some(fresh) = js::bar(&api::json_of(&response).await) {
            bar.update(|b| {
                b.project_name = fresh.project_name;
                b.stage_label = fresh.stage_label;
                b.return_url = fresh.return_url;
            });
        }
    });
}
