//! The browser side of the widget (the `hydrate` feature only):
//!
//! - `session`: the hand-off with the host page (ready, token, restore, resend);
//! - `boot`: the boot data the page carries;
//! - `token`: asking for a fresh token, and the message it holds back;
//! - `host_page`: messages to the host page, local storage, the Caddie bar's context;
//! - `embed`, `bus`: the `caddie-embed` bus with the hub, when framed in its project page;
//! - `api`: one way to call the chat API, and [`WidgetError`];
//! - `stream`: reading a turn's event stream into the chat;
//! - `turns`, `actions`, `components`: what the user's clicks send;
//! - `outbox`: the user's messages on their way, queued offline, kept over a reload;
//! - `clipboard`: copying a reply; `history`: the user's earlier conversations;
//! - `apps`: MCP Apps on screen torn down before the transcript goes.

pub mod actions;
pub mod api;
pub mod apps;
pub mod boot;
pub mod bus;
pub mod clipboard;
pub mod components;
pub mod elicitations;
pub mod embed;
pub mod feedback;
pub mod history;
pub mod host_page;
pub mod outbox;
pub mod session;
pub mod stream;
pub mod token;
pub mod turns;

pub use api::WidgetError;

/// A performance mark (`ca:hydrate`, `ca:hydrated`, `ca:token`,
/// `ca:interactive`):
/// `scripts/bench-widget.js` reads them to say where the opening time goes.
pub fn mark(name: &str) {
    if let Some(performance) = leptos::prelude::window().performance() {
        let _ = performance.mark(name);
    }
}
