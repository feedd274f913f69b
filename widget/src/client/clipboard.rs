//! Copying a reply to the clipboard (a framed widget may: the loader's
//! frame allows `clipboard-write`).

use leptos::prelude::*;
use leptos::task::spawn_local;
use wasm_bindgen_futures::JsFuture;

use crate::state::{Bubble, Chat};
use crate::wire::i18n::Msg;

/// Puts the reply's text on the clipboard; the button shows "Copied" and
/// the live region says it once, or that the browser refused.
pub fn copy_reply(chat: Chat, reply: Bubble) {
    let text = reply.text.get_untracked();
    spawn_local(async move {
        let written = match web_sys::window() {
            Some(window) => JsFuture::from(window.navigator().clipboard().write_text(&text)).await.is_ok(),
            None => false,
        };
        reply.state.update(|s| s.copied = written);
        chat.announce.set(chat.t(if written { Msg::CopiedSaid } else { Msg::CopyFailed }));
    });
}
