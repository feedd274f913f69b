//! The browser side of the widget (the `hydrate` feature only):
//!
//! - `token`: the boot data, the token hand-off with the host page and its renewal;
//! - `host_page`: messages to the host page, local storage, the Caddie bar's context;
//! - `api`: one way to call the chat API, and [`WidgetError`];
//! - `stream`: reading a turn's event stream into the chat;
//! - `turns`, `actions`, `components`: what the user's clicks send.

pub mod actions;
pub mod api;
pub mod components;
pub mod host_page;
pub mod stream;
pub mod token;
pub mod turns;

pub use api::WidgetError;
