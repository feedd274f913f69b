//! The boot data the server rendered into the page (`<meta name="ca-boot">`),
//! read once and kept for the browser side.

use std::cell::RefCell;

use leptos::prelude::*;
use wasm_bindgen::{JsCast, JsValue};

use crate::js;
use crate::wire::WidgetBoot;

thread_local! {
    static BOOT: RefCell<WidgetBoot> = Default::default();
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

/// The workspace this widget belongs to.
pub fn workspace_id() -> String {
    BOOT.with(|b| b.borrow().workspace_id.clone())
}

/// Where the full-page app asks for a fresh token, if anywhere.
pub fn renew_path() -> Option<String> {
    BOOT.with(|b| b.borrow().renew_path.clone())
}

/// The visitor's language (`en` when the page named none).
pub fn lang() -> String {
    let lang = BOOT.with(|b| b.borrow().lang.clone());
    if lang.is_empty() { "en".into() } else { lang }
}

/// The visitor's language as `Intl`'s locales argument.
pub fn locales() -> js_sys::Array {
    js_sys::Array::of1(&JsValue::from_str(&lang()))
}

/// A whole-dollar amount as the visitor's language writes it
/// (acme-bistro-api-contract.md: prices are whole US dollars).
pub fn money(amount: u64) -> String {
    let options = js::object(&[
        ("style", JsValue::from_str("currency")),
        ("currency", JsValue::from_str("USD")),
        ("minimumFractionDigits", JsValue::from_f64(0.0)),
        ("maximumFractionDigits", JsValue::from_f64(0.0)),
    ]);
    let format = js_sys::Intl::NumberFormat::new(&locales(), options.unchecked_ref()).format();
    format.call1(&JsValue::NULL, &JsValue::from_f64(amount as f64)).ok().and_then(|s| s.as_string()).unwrap_or_default()
}

/// True for the full-page app (launched from Caddie): its token came with
/// the page, and fresh ones come from the server.
pub fn is_full_page() -> bool {
    BOOT.with(|b| b.borrow().token.is_some())
}
