//! Browser side of the widget: the token hand-off with the host page, the
//! chat API over `fetch`, and the turn's event stream.

use js_sys::{Object, Reflect, Uint8Array};
use leptos::prelude::*;
use leptos::task::spawn_local;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use web_sys::{Headers, ReadableStreamDefaultReader, RequestInit, Response};

use crate::app::Arg;
use crate::app::{Bubble, Chat, Role};
use crate::js;
use crate::sse::SseParser;
use crate::wire::WidgetBoot;

thread_local! {
    static BOOT: std::cell::RefCell<WidgetBoot> = Default::default();
    /// A message to send again once the host hands over a fresh token.
    static RETRY: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
}

/// The boot data the server rendered into `<meta name="ca-boot">`.
pub fn read_boot() -> WidgetBoot {
    let boot = document()
        .query_selector("meta[name=ca-boot]")
        .ok()
        .flatten()
        .and_then(|m| m.get_attribute("content"))
        .and_then(|json| js::boot(&js::parse(&json)))
        .unwrap_or_default();
    BOOT.with(|b| *b.borrow_mut() = boot.clone());
    boot
}

fn storage_key() -> String {
    BOOT.with(|b| format!("ca:conversation:{}", b.borrow().workspace_id))
}

/// Listens for the host page's token and tells it the frame is ready.
pub fn start(chat: Chat, boot: WidgetBoot) {
    let own_origin = window().location().origin().unwrap_or_default();
    let handle = window_event_listener(leptos::ev::message, move |e: web_sys::MessageEvent| {
        let origin = e.origin();
        let from_parent =
            e.source().map(|s| Object::is(&s, &JsValue::from(window().parent().ok().flatten()))).unwrap_or(false);
        if !from_parent || (origin != own_origin && !boot.allowed_origins.contains(&origin)) {
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
                receive_token(chat, token);
            }
            _ => {}
        }
    });
    on_cleanup(move || handle.remove());
    // The full-page app (launched from Caddie) has its token from the page.
    if boot.token.is_some() {
        spawn_local(restore(chat));
    } else {
        post_to_host("ca:ready");
    }
}

/// A token arrived (from the host page, or the server for the full-page
/// app): the first one restores the conversation; a message refused for an
/// expired token goes again with a new one, and the same token again means
/// there is no fresher one.
fn receive_token(chat: Chat, token: String) {
    let previous = chat.token.get_untracked();
    let renewed = previous.as_deref() != Some(token.as_str());
    chat.token.set(Some(token));
    if previous.is_none() {
        spawn_local(restore(chat));
    }
    if let Some(text) = RETRY.with(|r| r.borrow_mut().take()) {
        chat.activity.set(None);
        if renewed {
            send(chat, text);
        } else {
            chat.last_sent.set(Some(text));
            chat.error.set(Some("Your session has expired. Reload the page to continue.".into()));
        }
    }
}

/// Asks for a fresh token: from the host page, or — full page — from the
/// server, with the session cookie.
fn renew_token(chat: Chat) {
    let full_page = BOOT.with(|b| b.borrow().token.is_some());
    if !full_page {
        post_to_host("ca:token-expired");
        return;
    }
    let workspace = BOOT.with(|b| b.borrow().workspace_id.clone());
    spawn_local(async move {
        let init = RequestInit::new();
        init.set_method("POST");
        let Ok(request) =
            web_sys::Request::new_with_str_and_init(&format!("/caddie/api/spaces/{workspace}/token"), &init)
        else {
            return;
        };
        let fresh =
            match JsFuture::from(window().fetch_with_request(&request)).await.map(JsCast::unchecked_into::<Response>) {
                Ok(r) if r.status() == 200 => text_of(&r).await.ok().and_then(|t| js::string(&js::parse(&t), "token")),
                _ => None,
            };
        // None: the session ended; the same token again reports it.
        let token = fresh.or_else(|| chat.token.get_untracked()).unwrap_or_default();
        receive_token(chat, token);
    });
}

fn field(data: &JsValue, name: &str) -> Option<String> {
    Reflect::get(data, &JsValue::from_str(name)).ok().and_then(|v| v.as_string())
}

/// Sends `{type}` to the host page. It carries nothing secret, so any
/// origin may receive it; the host's loader checks that it came from us.
pub fn post_to_host(kind: &str) {
    post_with_detail(kind, None);
}

/// Tells the host page's `message` hook that a message was sent or
/// finished: its role and id only, never its text (any origin may hear it).
fn post_message_event(role: &str, message_id: Option<&str>) {
    let detail = Object::new();
    let _ = Reflect::set(&detail, &"role".into(), &role.into());
    if let Some(id) = message_id {
        let _ = Reflect::set(&detail, &"message_id".into(), &id.into());
    }
    post_with_detail("ca:message", Some(detail));
}

fn post_with_detail(kind: &str, detail: Option<Object>) {
    let Ok(Some(parent)) = window().parent() else { return };
    let message = Object::new();
    let _ = Reflect::set(&message, &"type".into(), &kind.into());
    if let Some(detail) = detail {
        let _ = Reflect::set(&message, &"detail".into(), &detail);
    }
    let _ = parent.post_message(&message, "*");
}

pub fn forget_conversation() {
    if let Ok(Some(storage)) = window().local_storage() {
        let _ = storage.remove_item(&storage_key());
    }
}

fn remember_conversation(id: &str) {
    if let Ok(Some(storage)) = window().local_storage() {
        let _ = storage.set_item(&storage_key(), id);
    }
}

/// The host bar's context (§6): `cctx` moves from the URL into
/// `sessionStorage` (and out of the address bar); while the server still
/// knows it, `GET /caddie/api/context/{ctx}` refreshes the bar. Otherwise
/// the bar keeps what the server rendered from the space's link.
pub fn caddie_context(bar: RwSignal<crate::wire::CaddieBar>) {
    let location = window().location();
    let key = BOOT.with(|b| format!("ca:cctx:{}", b.borrow().workspace_id));
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
        let Ok(request) = web_sys::Request::new_with_str(&format!("/caddie/api/context/{ctx}")) else { return };
        let Ok(response) = JsFuture::from(window().fetch_with_request(&request)).await else { return };
        let response: Response = response.unchecked_into();
        if response.status() != 200 {
            if let Some(s) = window().session_storage().ok().flatten() {
                let _ = s.remove_item(&key);
            }
            return;
        }
        let Ok(text) = text_of(&response).await else { return };
        if let Some(fresh) = js::bar(&js::parse(&text)) {
            bar.update(|b| {
                b.project_name = fresh.project_name;
                b.stage_label = fresh.stage_label;
                b.return_url = fresh.return_url;
            });
        }
    });
}

/// Brings back the last conversation after a reload.
async fn restore(chat: Chat) {
    let Some(id) = window().local_storage().ok().flatten().and_then(|s| s.get_item(&storage_key()).ok().flatten())
    else {
        return;
    };
    let Some(token) = chat.token.get_untracked() else { return };
    let response = match request("GET", &format!("/v1/conversations/{id}"), &token, None).await {
        Ok(r) => r,
        Err(_) => return,
    };
    if response.status() == 404 {
        forget_conversation();
        return;
    }
    if response.status() == 401 {
        renew_token(chat);
        return;
    }
    let Ok(text) = text_of(&response).await else { return };
    let view = js::parse(&text);
    let Some(id) = js::string(&view, "id") else { return };
    chat.conversation_id.set(Some(id));
    let action = js::get(&view, "pending_action");
    chat.action.set(js::pending_action(&action));
    for message in js::list(&view, "messages") {
        let role = if js::string(&message, "role").as_deref() == Some("user") { Role::User } else { Role::Assistant };
        let bubble = chat.push(role, &js::string(&message, "text").unwrap_or_default());
        bubble.html.set(js::string(&message, "html"));
        bubble.cards.set(js::cards(&message, "cards"));
        for c in js::list(&message, "components") {
            if let (Some(id), Some(kind)) = (js::string(&c, "component_id"), js::string(&c, "kind")) {
                chat.show_component(bubble, id, kind, js::stringify(&js::get(&c, "data")), false);
            }
        }
    }
}

/// Sends the user's message and streams the turn into a new bubble.
pub fn send(chat: Chat, text: String) {
    chat.error.set(None);
    // A new message answers an open action by moving on: the server cancels it.
    chat.action.set(None);
    chat.last_sent.set(Some(text.clone()));
    let asked = chat.push(Role::User, &text);
    let reply = chat.push(Role::Assistant, "");
    post_message_event("user", None);
    chat.busy.set(true);
    chat.announce.set("The assistant is replying.".into());
    spawn_local(async move {
        let outcome = run_turn(chat, reply, text.clone()).await;
        chat.busy.set(false);
        if outcome.as_ref().is_err_and(|e| e == EXPIRED) {
            // Ask the host page for a fresh token; the message goes again when it arrives.
            chat.bubbles.update(|b| b.retain(|x| x.id != reply.id && x.id != asked.id));
            RETRY.with(|r| *r.borrow_mut() = Some(text));
            chat.activity.set(Some("Reconnecting…".into()));
            renew_token(chat);
            return;
        }
        finish_reply(chat, reply, outcome);
    });
}

/// Settles a streamed reply: done, or failed with a message and Retry.
fn finish_reply(chat: Chat, reply: Bubble, outcome: Result<(), String>) {
    chat.busy.set(false);
    chat.activity.set(None);
    chat.turn_id.set(None);
    match outcome {
        Ok(()) => {
            // A turn that only proposed a change has no text of its own.
            drop_if_empty(chat, reply);
            chat.announce.set("The reply is complete.".into());
        }
        Err(message) => {
            // An empty, failed reply is removed; a partial one stays, marked.
            if !drop_if_empty(chat, reply) {
                reply.interrupted.set(true);
            }
            chat.error.set(Some(message.clone()));
            chat.announce.set(message);
        }
    }
}

async fn run_turn(chat: Chat, reply: Bubble, text: String) -> Result<(), String> {
    let token = chat.token.get_untracked().ok_or("Not connected yet.")?;
    let conversation = chat.conversation_id.get_untracked();
    let body = js::stringify(&js::object(&[
        ("conversation_id", js::text_or_null(conversation.as_deref())),
        ("message", JsValue::from_str(&text)),
    ]));
    let response = request("POST", "/v1/chat/turns", &token, Some(body))
        .await
        .map_err(|_| "The assistant could not be reached. Check your connection and retry.".to_string())?;
    match response.status() {
        200 => {}
        401 => return Err(EXPIRED.into()),
        404 => {
            chat.conversation_id.set(None);
            forget_conversation();
            return Err("That conversation is gone. Retry to start a new one.".into());
        }
        _ => return Err(error_message(&response).await),
    }
    read_stream(chat, reply, response).await
}

/// Reads a turn's event stream into `reply`.
async fn read_stream(chat: Chat, reply: Bubble, response: Response) -> Result<(), String> {
    let body = response.body().ok_or("The reply had no body.")?;
    let reader: ReadableStreamDefaultReader = body.get_reader().unchecked_into();
    let mut parser = SseParser::default();
    let mut finished = false;
    let mut failure: Option<String> = None;
    loop {
        let chunk = JsFuture::from(reader.read()).await.map_err(|_| lost())?;
        if Reflect::get(&chunk, &"done".into()).ok().and_then(|d| d.as_bool()).unwrap_or(true) {
            break;
        }
        let bytes = Reflect::get(&chunk, &"value".into()).map_err(|_| lost())?;
        for event in parser.feed(&Uint8Array::new(&bytes).to_vec()) {
            let data = js::parse(&event.data);
            match event.event.as_str() {
                "turn" => {
                    if let (Some(conversation), Some(turn)) =
                        (js::string(&data, "conversation_id"), js::string(&data, "turn_id"))
                    {
                        remember_conversation(&conversation);
                        chat.conversation_id.set(Some(conversation));
                        chat.turn_id.set(Some(turn));
                    }
                }
                "text" => {
                    if let Some(delta) = js::string(&data, "delta") {
                        reply.text.update(|t| t.push_str(&delta));
                    }
                }
                "tool" => {
                    if let (Some(name), Some(status)) = (js::string(&data, "name"), js::string(&data, "status")) {
                        let line = (status == "started").then(|| format!("Running {}…", name.replace('_', " ")));
                        chat.activity.set(line);
                    }
                }
                "display" => {
                    let cards = js::cards(&data, "cards");
                    reply.cards.update(|c| c.extend(cards));
                }
                "component" => {
                    if let (Some(id), Some(kind)) = (js::string(&data, "component_id"), js::string(&data, "kind")) {
                        let update = js::boolean(&data, "update").unwrap_or(false);
                        chat.show_component(reply, id, kind, js::stringify(&js::get(&data, "data")), update);
                    }
                }
                "message" => {
                    if let (Some(id), Some(text), Some(html)) =
                        (js::string(&data, "message_id"), js::string(&data, "text"), js::string(&data, "html"))
                    {
                        post_message_event("assistant", Some(&id));
                        reply.text.set(text);
                        reply.html.set(Some(html));
                    }
                }
                "pending_action" => {
                    if let Some(action) = js::pending_action(&data) {
                        chat.action_error.set(None);
                        chat.action.set(Some(action));
                        chat.announce.set("The assistant needs your approval before it changes anything.".into());
                        focus_action_card();
                    }
                }
                "error" => {
                    if let Some(message) = js::string(&data, "message") {
                        failure = Some(message);
                    }
                }
                "done" if js::string(&data, "stop_reason").is_some() => finished = true,
                _ => {}
            }
        }
    }
    if let Some(message) = failure {
        return Err(message);
    }
    if !finished {
        return Err(lost());
    }
    Ok(())
}

/// The error of a turn refused for an expired token.
const EXPIRED: &str = "expired";

fn lost() -> String {
    "The connection was lost before the reply finished. Retry to ask again.".into()
}

/// Answers the pending action. `confirm` returns the action in its new
/// state; `apply` and `cancel` stream the assistant's reply into a new message.
pub fn answer(chat: Chat, verb: &'static str, reason: Option<String>) {
    let (Some(action), Some(token)) = (chat.action.get_untracked(), chat.token.get_untracked()) else { return };
    chat.action_busy.set(true);
    chat.action_error.set(None);
    spawn_local(async move {
        let path = format!("/v1/actions/{}/{verb}", action.action_id);
        let body =
            (verb == "cancel").then(|| js::stringify(&js::object(&[("reason", js::text_or_null(reason.as_deref()))])));
        let response = match request("POST", &path, &token, body).await {
            Ok(r) => r,
            Err(_) => {
                chat.action_busy.set(false);
                chat.action_error.set(Some("The assistant could not be reached. Try again.".into()));
                return;
            }
        };
        let status = response.status();
        if status == 200 && verb == "confirm" {
            let updated =
                text_of(&response).await.ok().and_then(|t| js::pending_action(&js::get(&js::parse(&t), "action")));
            chat.action.set(updated.or(Some(action)));
            chat.action_busy.set(false);
            focus_action_card();
            return;
        }
        if status == 200 {
            chat.action.set(None);
            chat.action_busy.set(false);
            let reply = chat.push(Role::Assistant, "");
            chat.busy.set(true);
            chat.announce.set(if verb == "apply" { "Applying the change." } else { "Cancelling the change." }.into());
            let outcome = read_stream(chat, reply, response).await;
            finish_reply(chat, reply, outcome);
            return;
        }
        chat.action_busy.set(false);
        if status == 401 {
            renew_token(chat);
            chat.action_error.set(Some("Your session expired. Reconnecting — try again in a moment.".into()));
            return;
        }
        let body = js::parse(&text_of(&response).await.unwrap_or_default());
        let code = js::string(&body, "code").unwrap_or_default();
        let current = js::pending_action(&js::get(&body, "action"));
        let message = match code.as_str() {
            "expired" => "This change expired before it was applied. Ask the assistant again.",
            "already_applied" => "This change was already applied.",
            "action_in_progress" => "This change is already being applied.",
            "action_cancelled" => "This change was cancelled.",
            "confirmation_required" => "Please confirm the delete first.",
            _ => "The change could not be answered. Try again.",
        };
        let open = current.as_ref().is_some_and(|a| a.status == "pending" || a.status == "confirmed_once");
        chat.action.set(if open { current } else { None });
        if open {
            chat.action_error.set(Some(message.into()));
        } else {
            chat.error.set(Some(message.into()));
        }
    });
}

/// Removes a reply that has neither text, cards nor components; true if it did.
fn drop_if_empty(chat: Chat, reply: Bubble) -> bool {
    let empty = reply.text.with_untracked(String::is_empty)
        && reply.cards.with_untracked(Vec::is_empty)
        && reply.components.with_untracked(Vec::is_empty);
    if empty {
        chat.bubbles.update(|b| b.retain(|x| x.id != reply.id));
    }
    empty
}

/// Moves keyboard focus to the action card once it is drawn.
fn focus_action_card() {
    request_animation_frame(|| {
        if let Some(card) = document().get_element_by_id("ca-action")
            && let Ok(card) = card.dyn_into::<web_sys::HtmlElement>()
        {
            let _ = card.focus();
        }
    });
}

/// A component's own button: runs one of its declared tools and refreshes
/// the components of its kind with the result.
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
        let outcome = match request("POST", &path, &token, Some(body)).await {
            Err(_) => Err("The assistant could not be reached. Try again.".to_string()),
            Ok(r) if r.status() == 200 => {
                let component = js::get(&js::parse(&text_of(&r).await.unwrap_or_default()), "component");
                if let Some(kind) = js::string(&component, "kind") {
                    chat.refresh_kind(&kind, &js::stringify(&js::get(&component, "data")));
                    chat.announce.set("Your order was updated.".into());
                }
                Ok(())
            }
            Ok(r) if r.status() == 401 => {
                renew_token(chat);
                Err("Your session expired. Reconnecting — try again in a moment.".to_string())
            }
            Ok(r) => Err(error_message(&r).await),
        };
        busy.set(false);
        if let Err(message) = outcome {
            error.set(Some(message));
        }
    });
}

/// Asks the server to stop the running turn.
pub fn stop(chat: Chat) {
    let (Some(turn_id), Some(token)) = (chat.turn_id.get_untracked(), chat.token.get_untracked()) else { return };
    spawn_local(async move {
        let _ = request("POST", &format!("/v1/turns/{turn_id}/stop"), &token, None).await;
    });
}

async fn request(method: &str, path: &str, token: &str, body: Option<String>) -> Result<Response, JsValue> {
    let headers = Headers::new()?;
    headers.set("Authorization", &format!("Bearer {token}"))?;
    let init = RequestInit::new();
    init.set_method(method);
    if let Some(body) = body {
        headers.set("Content-Type", "application/json")?;
        init.set_body(&JsValue::from_str(&body));
    }
    init.set_headers(&headers);
    let request = web_sys::Request::new_with_str_and_init(path, &init)?;
    let response = JsFuture::from(window().fetch_with_request(&request)).await?;
    response.dyn_into::<Response>()
}

async fn text_of(response: &Response) -> Result<String, JsValue> {
    JsFuture::from(response.text()?).await?.as_string().ok_or_else(|| JsValue::from_str("not text"))
}

/// The server's `{"error"}` message, or a generic line.
async fn error_message(response: &Response) -> String {
    let generic = "Something went wrong. Please retry.".to_string();
    let Ok(text) = text_of(response).await else { return generic };
    js::string(&js::parse(&text), "error").unwrap_or(generic)
}
