//! MCP Apps hear `ui/resource-teardown` before the transcript that frames
//! them goes (a new conversation, another one opened): each app's bridge
//! page (this origin, server/src/sandbox/bridge.js) keeps `caTeardown` on
//! this window while it is on screen. Called just before the transcript is
//! emptied, it moves the apps' frames aside (hidden, still running), asks
//! each app, and removes each frame once its app answered (three seconds
//! at most); the new transcript does not wait.
//! With no app on screen there is none.

use leptos::wasm_bindgen::JsCast;

/// Hands the apps on screen to their teardown.
pub fn teardown() {
    let window = leptos::prelude::window();
    let ask = js_sys::Reflect::get(&window, &"caTeardown".into()).unwrap_or_default();
    if let Some(ask) = ask.dyn_ref::<js_sys::Function>() {
        let _ = ask.call0(&window);
    }
}
