//! The Context Assistant widget: a Leptos app, rendered by the server (the
//! `ssr` feature) and hydrated in the browser (the `hydrate` feature) inside
//! the iframe that `/embed.js` creates. No router: one page.

mod app;
#[cfg(feature = "hydrate")]
mod client;
#[cfg(feature = "hydrate")]
mod js;
pub mod sse;
pub mod wire;

pub use app::{App, shell};

/// The browser entry point, called by Leptos' hydration script.
#[cfg(feature = "hydrate")]
#[wasm_bindgen::prelude::wasm_bindgen]
pub fn hydrate() {
    use leptos::prelude::*;
    console_error_panic_hook::set_once();
    let boot = client::read_boot();
    leptos::mount::hydrate_body(move || {
        provide_context(boot);
        view! { <App/> }
    });
}
