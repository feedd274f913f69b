//! The Context Assistant widget: a Leptos app, rendered by the server (the
//! `ssr` feature) and hydrated in the browser (the `hydrate` feature) inside
//! the iframe that `/embed.js` creates. No router: one page.
//!
//! - `state`: the chat's signals (messages, the pending action, busy flags);
//! - `components/`: one file per part of the screen;
//! - `client/` (browser only): the token hand-off with the host page, the
//!   chat API, the turn's event stream, and their errors;
//! - `js`: the JSON and event-stream readers the browser runs (`js/dom.js`);
//! - `mount` (browser only): hydration without Leptos' serialized-data reader;
//! - `wire`: the types and words the server and the widget share.

// Leptos' views are deeply nested types; the hydrate build's chat view
// (the log or the earlier conversations) needs the room.
#![recursion_limit = "256"]

mod components;
mod intents;
mod state;

#[cfg(feature = "hydrate")]
mod client;
pub mod form;
pub mod html;
#[cfg(feature = "hydrate")]
mod js;
#[cfg(feature = "hydrate")]
mod mount;
pub mod wire;

pub use components::{App, shell};

/// The browser entry point, called by Leptos' hydration script.
#[cfg(feature = "hydrate")]
#[wasm_bindgen::prelude::wasm_bindgen]
pub fn hydrate() {
    use leptos::prelude::*;
    // A debug build says a panic in the console; the release build's panics
    // trap at once (scripts/build-site.sh), so it has no hook to call.
    #[cfg(debug_assertions)]
    console_error_panic_hook::set_once();
    client::mark("ca:hydrate");
    let boot = client::boot::read_boot();
    mount::hydrate_body(move || {
        provide_context(boot);
        view! { <App/> }
    });
    // The composer's field opens for writing now that Enter sends.
    if let Some(field) = leptos::prelude::document().get_element_by_id("ca-input") {
        let _ = field.remove_attribute("readonly");
    }
    client::mark("ca:hydrated");
}
