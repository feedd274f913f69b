//! The boot data the server rendered into the page (`<meta name="ca-boot">`),
//! read once and kept for the browser side.

use std::cell::RefCell;

use leptos::prelude::*;

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

/// True for the full-page app (launched from Caddie): its token came with
/// the page, and fresh ones come from the server.
pub fn is_full_page() -> bool {
    BOOT.with(|b| b.borrow().token.is_some())
}
