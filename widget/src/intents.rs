//! What the user's clicks ask for. Each intent checks the chat's state
//! (nothing is sent while a reply streams or before there is a token),
//! then hands the work to the browser client; on the server, where
//! nothing is clicked, it does nothing.

use leptos::prelude::*;

#[cfg(feature = "hydrate")]
use crate::client;
use crate::state::{Answer, Arg, Bubble, Chat};
use crate::wire::Rating;

/// Sends `text` as the user's next message. Without a token or a
/// network it queues, and goes once both are there.
pub fn send(chat: Chat, text: String, files: String) {
    let empty = text.trim().is_empty() && files.is_empty();
    let ready = !empty && !chat.busy.get_untracked() && chat.wait_seconds.get_untracked() == 0;
    #[cfg(feature = "hydrate")]
    if ready {
        chat.history.set(None);
        client::turns::send(chat, text, files);
    }
    #[cfg(not(feature = "hydrate"))]
    let _ = (ready, files);
}

/// The error's Retry: the message that was not sent goes again with its
/// key, else the last message is sent anew; focus goes on in the
/// composer, as the alert and its button are gone.
pub fn retry(chat: Chat) {
    chat.error.set(None);
    #[cfg(feature = "hydrate")]
    {
        if !client::turns::retry(chat)
            && let Some(last) = chat.last_sent.with_value(|l| l.first().cloned())
        {
            send(chat, last.text, last.files);
        }
        client::stream::focus_composer();
    }
}

/// A message's own Retry, after the network kept failing: it goes again,
/// with the key it had.
pub fn resend(chat: Chat, bubble: Bubble) {
    #[cfg(feature = "hydrate")]
    client::turns::resend(chat, bubble);
    #[cfg(not(feature = "hydrate"))]
    let _ = (chat, bubble);
}

/// Nothing streams and no message is being handed over: the conversation
/// on screen may be replaced.
fn idle(chat: Chat) -> bool {
    #[cfg(feature = "hydrate")]
    let sending = client::outbox::in_flight();
    #[cfg(not(feature = "hydrate"))]
    let sending = false;
    !chat.busy.get_untracked() && !sending
}

/// Sends the user's last message again, for a fresh reply: its words and
/// its files (kept with the last message sent, or restored).
pub fn ask_again(chat: Chat) {
    let last = chat
        .bubbles
        .with_untracked(|b| b.iter().rev().find(|m| m.role == crate::wire::Role::User).map(|m| m.text.get_untracked()));
    if let Some(text) = last {
        let files = chat
            .last_sent
            .with_value(|l| l.first().filter(|o| o.text == text).map(|o| o.files.clone()))
            .unwrap_or_default();
        send(chat, text, files);
    }
}

/// Asks the server to stop the running turn.
pub fn stop(chat: Chat) {
    #[cfg(feature = "hydrate")]
    client::turns::stop(chat);
    #[cfg(not(feature = "hydrate"))]
    let _ = chat;
}

/// Answers the pending action.
pub fn answer(chat: Chat, answer: Answer, reason: Option<String>) {
    if chat.action_busy.get_untracked() || chat.busy.get_untracked() {
        return;
    }
    #[cfg(feature = "hydrate")]
    client::actions::answer(chat, answer, reason);
    #[cfg(not(feature = "hydrate"))]
    let _ = (answer, reason);
}

/// Answers a tool's question (its form's values go with `accept`).
pub fn answer_elicitation(chat: Chat, action: crate::wire::ElicitAction) {
    if chat.elicitation_busy.get_untracked() || chat.elicitation.with_untracked(Option::is_none) {
        return;
    }
    #[cfg(feature = "hydrate")]
    client::elicitations::answer(chat, action);
    #[cfg(not(feature = "hydrate"))]
    let _ = action;
}

/// Starts a new, empty conversation.
pub fn reset(chat: Chat) {
    if !idle(chat) {
        return;
    }
    #[cfg(feature = "hydrate")]
    client::apps::teardown();
    chat.action.set(None);
    chat.bubbles.set(Vec::new());
    chat.conversation_id.set(None);
    chat.error.set(None);
    chat.history.set(None);
    #[cfg(feature = "hydrate")]
    {
        client::host_page::forget_conversation();
        // Messages still queued go to the new conversation.
        client::outbox::show_queued(chat);
    }
}

/// A component's own button: one of the tools it declared, at once.
pub fn call_component(
    chat: Chat,
    component_id: String,
    tool: &'static str,
    arguments: Vec<(&'static str, Arg)>,
    busy: RwSignal<bool>,
    error: RwSignal<Option<String>>,
) {
    if busy.get_untracked() {
        return;
    }
    #[cfg(feature = "hydrate")]
    client::components::call_component(chat, component_id, tool, arguments, busy, error);
    #[cfg(not(feature = "hydrate"))]
    let _ = (chat, component_id, tool, arguments, error);
}

/// Closes the widget: the host page's loader hides the frame.
pub fn close() {
    #[cfg(feature = "hydrate")]
    client::host_page::post_to_host("ca:close");
}

/// Copies a finished reply's text; the button and the live region say
/// whether it did.
pub fn copy_reply(chat: Chat, reply: Bubble) {
    #[cfg(feature = "hydrate")]
    client::clipboard::copy_reply(chat, reply);
    #[cfg(not(feature = "hydrate"))]
    let _ = (chat, reply);
}

/// Gives the reply a thumbs up or down (the same thumb again takes it back).
pub fn rate(chat: Chat, reply: Bubble, rating: Rating) {
    #[cfg(feature = "hydrate")]
    client::feedback::rate(chat, reply, rating);
    #[cfg(not(feature = "hydrate"))]
    let _ = (chat, reply, rating);
}

/// Adds the user's comment to their thumb on the reply.
pub fn comment(chat: Chat, reply: Bubble, text: String) {
    #[cfg(feature = "hydrate")]
    client::feedback::comment(chat, reply, text);
    #[cfg(not(feature = "hydrate"))]
    let _ = (chat, reply, text);
}

/// Opens the list of the user's earlier conversations.
pub fn show_history(chat: Chat) {
    let ready = !chat.busy.get_untracked() && chat.token.get_untracked().is_some();
    #[cfg(feature = "hydrate")]
    if ready {
        client::history::show(chat);
    }
    #[cfg(not(feature = "hydrate"))]
    let _ = ready;
}

/// Closes the list, back to the chat as it was.
pub fn hide_history(chat: Chat) {
    chat.history.set(None);
}

/// Goes back to an earlier conversation, from the list.
pub fn open_conversation(chat: Chat, id: String) {
    if !idle(chat) {
        return;
    }
    #[cfg(feature = "hydrate")]
    client::history::open(chat, id);
    #[cfg(not(feature = "hydrate"))]
    let _ = id;
}
