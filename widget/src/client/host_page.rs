//! What the widget tells the page around it, and what it keeps in the
//! browser: `postMessage` to the host page (never anything secret), the
//! conversation id and its copy for reading offline in `localStorage`,
//! and the Caddie bar's launch context.

use js_sys::{Object, Reflect};
use leptos::prelude::*;
use leptos::task::spawn_local;
use wasm_bindgen::JsValue;

use super::{api, boot};
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

fn conversation_key() -> String {
    format!("ca:conversation:{}", boot::workspace_id())
}

/// The conversation to restore after a reload, if one was remembered.
pub fn remembered_conversation() -> Option<String> {
    window().local_storage().ok().flatten().and_then(|s| s.get_item(&conversation_key()).ok().flatten())
}

pub fn remember_conversation(id: &str) {
    if let Ok(Some(storage)) = window().local_storage() {
        let _ = storage.set_item(&conversation_key(), id);
    }
}

pub fn forget_conversation() {
    if let Ok(Some(storage)) = window().local_storage() {
        let _ = storage.remove_item(&conversation_key());
    }
    drop_view();
}

fn view_key() -> String {
    format!("ca:view:{}", boot::workspace_id())
}

/// Keeps the conversation as the server showed it (`GET
/// /v1/conversations/{id}`'s body), for reading offline.
pub fn keep_view(text: &str) {
    if let Ok(Some(storage)) = window().local_storage() {
        let _ = storage.set_item(&view_key(), text);
    }
}

/// The conversation kept for reading offline, if it is `id`'s.
pub fn kept_view(id: &str) -> Option<JsValue> {
    let kept = window().local_storage().ok()??.get_item(&view_key()).ok()??;
    let view = js::parse(&kept);
    (js::string(&view, "id").as_deref() == Some(id)).then_some(view)
}

/// Forgets the conversation kept for reading offline (the visitor left it).
fn drop_view() {
    if let Ok(Some(storage)) = window().local_storage() {
        let _ = storage.remove_item(&view_key());
    }
}

/// The host bar's context (§6): `cctx` moves from the URL into
/// `sessionStorage` (and out of the address bar); while the server still
/// knows it, `GET /caddie/api/context/{ctx}` refreshes the bar. Otherwise
/// the bar keeps what the server rendered from the space's link.
pub fn caddie_context(bar: RwSignal<CaddieBar>) {
    let location = window().location();
    let key = format!("ca:cctx:{}", boot::workspace_id());
    let storage = window().session_storage().ok().flatten();
    if let Ok(params) = web_sys::UrlSearchParams::new_with_str(&location.search().unwrap_or_default())
        && let Some(ctx) = params.get("cctx")
    {
        if let Some(s) = &storage {
            let _ = s.set_item(&key, &ctx);
        }
        params.delete("cctx");
        params.delete("tour");
        let rest = String::from(params.to_string());
        let path = location.pathname().unwrap_or_default();
        let clean = if rest.is_empty() { path } else { format!("{path}?{rest}") };
        if let Ok(history) = window().history() {
            let _ = history.replace_state_with_url(&JsValue::NULL, "", Some(&clean));
        }
    }
    let Some(ctx) = storage.as_ref().and_then(|s| s.get_item(&key).ok().flatten()) else { return };
    if ctx.len() != 32 || !ctx.bytes().all(|b| b.is_ascii_hexdigit()) {
        return;
    }
    spawn_local(async move {
        let Ok(response) = api::send("GET", &format!("/caddie/api/context/{ctx}"), None, None).await else { return };
        if response.status() != 200 {
            if let Some(s) = window().session_storage().ok().flatten() {
                let _ = s.remove_item(&key);
            }
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
