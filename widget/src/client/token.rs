//! The embed token's plumbing: noting that a message waits while a fresh
//! token is asked for, and asking for one — from the host page, or for the
//! full-page app from the server. A fresh token is handed to whoever
//! `session` registered ([`set_receiver`]), so this file never calls back
//! up into the chat's flows.

use std::cell::Cell;

use leptos::prelude::*;
use leptos::task::spawn_local;

use super::{api, boot, host_page};
use crate::js;
use crate::state::Chat;
use crate::wire::i18n::Msg;

/// Takes a fresh token for the chat.
type Receiver = fn(Chat, String);

thread_local! {
    /// A message waits to be sent again once a fresh token arrives.
    static RETRY: Cell<bool> = const { Cell::new(false) };
    /// Who takes a token that arrives.
    static RECEIVER: Cell<Option<Receiver>> = const { Cell::new(None) };
}

/// Registers who takes a token that arrives.
pub fn set_receiver(receiver: Receiver) {
    RECEIVER.with(|r| r.set(Some(receiver)));
}

fn deliver(chat: Chat, token: String) {
    if let Some(receiver) = RECEIVER.with(Cell::get) {
        receiver(chat, token);
    }
}

/// True (once) when a message waits for a fresh token.
pub fn take_retry() -> bool {
    RETRY.replace(false)
}

/// Notes that a message waits for a fresh token, and asks for one.
pub fn retry_after_renewal(chat: Chat) {
    RETRY.set(true);
    chat.activity.set(Some(chat.t(Msg::Reconnecting)));
    renew(chat);
}

/// Asks for a fresh token: from the host page (it answers with a
/// `ca:token` message), or — full page — from the server where the boot
/// says (Caddie's space, the console's preview), with the session cookie.
pub fn renew(chat: Chat) {
    let full_page = boot::is_full_page();
    if !full_page {
        host_page::post_to_host("ca:token-expired");
        return;
    }
    let path = boot::renew_path();
    spawn_local(async move {
        let fresh = match &path {
            Some(path) => match api::send("POST", path, None, None).await {
                Ok(r) if r.status() == 200 => js::string(&api::json_of(&r).await, "token"),
                _ => None,
            },
            None => None,
        };
        if fresh.is_none() {
            super::bus::needs_auth();
        }
        // None: the session ended; the same token again reports it.
        let token = fresh.or_else(|| chat.token.get_untracked()).unwrap_or_default();
        deliver(chat, token);
    });
}
