//! Reading and writing JSON in the browser with the browser's own
//! `JSON.parse`/`JSON.stringify`, field by field. The widget's WASM carries
//! no JSON parser or serde deserializers this way (its size is a budget:
//! docs/benchmarks.md); the server keeps serde for the same wire types.

use js_sys::{Array, JSON, Object, Reflect};

use crate::state::Question;
use wasm_bindgen::JsValue;

use crate::wire::{
    ActionStatus, CaddieBar, DisplayCard, MenuCartCart, MenuCartData, MenuCartItem, MenuCartLine, PendingAction, Role,
    Theme, Verb, WidgetBoot,
};

#[wasm_bindgen::prelude::wasm_bindgen(module = "/src/js/dom.js")]
extern "C" {
    /// Redraws `root` to `html` in place, keeping the elements still there:
    /// its children, or with `outer` the root itself (`html` is its markup).
    pub fn morph(root: &web_sys::HtmlElement, html: &str, outer: bool);
    /// A question's form's values by field name; `undefined` while invalid.
    #[wasm_bindgen(js_name = formValues)]
    pub fn form_values(form: &web_sys::Element) -> JsValue;
    /// The text of sanitized HTML as a screen reader should hear it.
    pub fn spoken(html: &str) -> String;
    /// A new message's idempotency key.
    #[wasm_bindgen(js_name = newKey)]
    pub fn new_key() -> String;
    /// Opens what is kept for the token's subject (the frame's own storage,
    /// else what the host page's loader handed over with the token,
    /// `caKept`, kept back at its origin, `caHost`); true when the token is
    /// another subject's than the open record's (dropped: the frame reloads).
    #[wasm_bindgen(js_name = keepToken)]
    pub fn keep_token(workspace: &str, token: &str) -> bool;
    /// A restored message's files as the queue keeps them (`{"ids", "html"}`), or "".
    #[wasm_bindgen(js_name = filesOf)]
    pub fn files_of(message: &JsValue) -> String;
    /// A kept value (`outbox`, `conversation`, `view`).
    #[wasm_bindgen(js_name = keepGet)]
    pub fn keep_get(name: &str) -> Option<String>;
    /// Keeps a value, or forgets it (`None`).
    #[wasm_bindgen(js_name = keepSet)]
    pub fn keep_set(name: &str, value: Option<&str>);
    /// A turn's events, read from a `fetch` body one at a time.
    pub type Events;
    /// The server-sent events of `body` (`js/dom.js` says how they are read).
    pub fn events(body: &web_sys::ReadableStream) -> Events;
    /// The next event (`{event, data, id}`, `data` parsed), or null at the
    /// stream's end; rejects when the connection is lost.
    #[wasm_bindgen(method)]
    pub fn next(this: &Events) -> js_sys::Promise;
}

/// Shares a string with the widget's own scripts on its window: the token
/// the attachments code uploads with (`caToken`). Only this origin's
/// scripts see its window.
pub fn set_global(key: &str, value: &str) {
    if let Some(window) = web_sys::window() {
        let _ = Reflect::set(&window, &JsValue::from_str(key), &JsValue::from_str(value));
    }
}

/// The value of a JSON text; `undefined` when it is not JSON.
pub fn parse(text: &str) -> JsValue {
    JSON::parse(text).unwrap_or(JsValue::UNDEFINED)
}

pub fn stringify(value: &JsValue) -> String {
    JSON::stringify(value).ok().and_then(|s| s.as_string()).unwrap_or_default()
}

/// A field of an object (`undefined` for anything else).
pub fn get(value: &JsValue, key: &str) -> JsValue {
    if value.is_object() && !Array::is_array(value) {
        Reflect::get(value, &JsValue::from_str(key)).unwrap_or(JsValue::UNDEFINED)
    } else {
        JsValue::UNDEFINED
    }
}

pub fn string(value: &JsValue, key: &str) -> Option<String> {
    get(value, key).as_string()
}

pub fn boolean(value: &JsValue, key: &str) -> Option<bool> {
    get(value, key).as_bool()
}

/// A whole, non-negative number that fits `u32`.
pub fn count(value: &JsValue, key: &str) -> Option<u32> {
    get(value, key).as_f64().filter(|n| n.fract() == 0.0 && (0.0..=f64::from(u32::MAX)).contains(n)).map(|n| n as u32)
}

/// The items of an array field; empty for anything else.
pub fn list(value: &JsValue, key: &str) -> Vec<JsValue> {
    let field = get(value, key);
    if Array::is_array(&field) { Array::from(&field).iter().collect() } else { Vec::new() }
}

/// An object of these fields.
pub fn object(fields: &[(&str, JsValue)]) -> JsValue {
    let object = Object::new();
    for (key, value) in fields {
        let _ = Reflect::set(&object, &JsValue::from_str(key), value);
    }
    object.into()
}

pub fn text_or_null(value: Option<&str>) -> JsValue {
    value.map_or(JsValue::NULL, JsValue::from_str)
}

pub fn boot(v: &JsValue) -> Option<WidgetBoot> {
    let theme = get(v, "theme");
    let caddie = get(v, "caddie");
    Some(WidgetBoot {
        workspace_id: string(v, "workspace_id")?,
        allowed_origins: list(v, "allowed_origins").iter().filter_map(JsValue::as_string).collect(),
        demo_model: boolean(v, "demo_model").unwrap_or(false),
        title: string(v, "title").unwrap_or_default(),
        theme: Theme {
            mode: string(&theme, "mode"),
            accent: string(&theme, "accent"),
            radius: count(&theme, "radius").and_then(|r| u8::try_from(r).ok()),
            font: string(&theme, "font"),
        },
        token: string(v, "token"),
        renew_path: string(v, "renew_path"),
        caddie: caddie.is_object().then(|| bar(&caddie)).flatten(),
        lang: string(v, "lang").unwrap_or_default(),
        words: list(v, "words").iter().map(|w| w.as_string().unwrap_or_default()).collect(),
        greeting: string(v, "greeting"),
        prompts: list(v, "prompts").iter().filter_map(JsValue::as_string).collect(),
        accept: string(v, "accept").unwrap_or_default(),
    })
}

pub fn bar(v: &JsValue) -> Option<CaddieBar> {
    Some(CaddieBar {
        project_name: string(v, "project_name")?,
        stage_label: string(v, "stage_label").unwrap_or_default(),
        return_url: string(v, "return_url")?,
        tour: boolean(v, "tour").unwrap_or(false),
        embed_hub: string(v, "embed_hub"),
    })
}

pub fn card(v: &JsValue) -> Option<DisplayCard> {
    Some(DisplayCard {
        title: string(v, "title")?,
        url: string(v, "url")?,
        image: string(v, "image"),
        subtitle: string(v, "subtitle"),
        badges: list(v, "badges").iter().filter_map(JsValue::as_string).collect(),
    })
}

pub fn cards(v: &JsValue, key: &str) -> Vec<DisplayCard> {
    list(v, key).iter().filter_map(card).collect()
}

pub fn pending_action(v: &JsValue) -> Option<PendingAction> {
    Some(PendingAction {
        action_id: string(v, "action_id")?,
        tool: string(v, "tool")?,
        verb: Verb::parse(&string(v, "verb")?)?,
        preview: string(v, "preview").unwrap_or_default(),
        // The widget shows the host's preview, never the arguments.
        #[cfg(feature = "ssr")]
        arguments: serde_json::Value::Null,
        confirmations_required: if count(v, "confirmations_required") == Some(2) { 2 } else { 1 },
        expires_at: string(v, "expires_at").unwrap_or_default(),
        status: string(v, "status").and_then(|s| ActionStatus::parse(&s)).unwrap_or(ActionStatus::Pending),
        replaces: string(v, "replaces"),
    })
}

/// A tool's question (`elicitation`): the widget shows the server's form
/// and reads the answer from it, so it takes no fields.
pub fn elicitation(v: &JsValue) -> Option<Question> {
    Some(Question {
        elicitation_id: string(v, "elicitation_id")?,
        call_id: string(v, "call_id").unwrap_or_default(),
        html: string(v, "html").filter(|h| !h.is_empty())?,
    })
}

/// A conversation message's role.
pub fn role(v: &JsValue) -> Option<Role> {
    Role::parse(&string(v, "role")?)
}

pub fn menu_cart(v: &JsValue) -> Option<MenuCartData> {
    let items = list(v, "items")
        .iter()
        .map(|i| {
            Some(MenuCartItem {
                id: string(i, "id")?,
                name: string(i, "name")?,
                price: count(i, "price")?,
                kind: string(i, "kind")?,
                available: boolean(i, "available").unwrap_or(true),
            })
        })
        .collect::<Option<Vec<_>>>()?;
    if !Array::is_array(&get(v, "items")) {
        return None;
    }
    let lines = list(&get(v, "cart"), "lines")
        .iter()
        .map(|l| {
            Some(MenuCartLine {
                item: string(l, "item")?,
                quantity: count(l, "quantity")?,
                notes: string(l, "notes").unwrap_or_default(),
            })
        })
        .collect::<Option<Vec<_>>>()?;
    Some(MenuCartData { items, cart: MenuCartCart { lines } })
}

/// These run in the browser's engine (Node's V8, through
/// `wasm-bindgen-test-runner`): the code the widget runs, not a serde
/// stand-in. `./dev test` runs them (`widget_wasm_tests`).
#[cfg(all(test, target_arch = "wasm32"))]
mod tests;
