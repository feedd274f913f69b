//! A tool's question while it runs (an MCP server's form): its words as
//! plain text, a field per value it asks for, and Send, Decline and Cancel.
//! The form is the widget's own chrome, drawn by the server from the fields
//! it read out of the tool's schema (`widget::form`, the event's `html`);
//! the values are checked by the browser (required, ranges, lengths,
//! formats) and again by the server.
//!
//! Shown with one delegated listener (`region`). The form's markup is the
//! question's alone, so a redraw never takes what was typed or chosen; a
//! failed answer is said beside it.

use leptos::prelude::*;

use super::region::{self, region};
use crate::html::escape;
use crate::intents;
use crate::state::Chat;
use crate::wire::ElicitAction;

#[component]
pub fn ElicitationForm() -> impl IntoView {
    let chat = expect_context::<Chat>();
    let (form, note) = (NodeRef::new(), NodeRef::new());
    let first = region(form, move || chat.elicitation.with(|e| e.as_ref().map(|e| e.html.clone()).unwrap_or_default()));
    let first_note = region(note, move || {
        chat.elicitation_error
            .get()
            .map(|error| format!("<p class=\"ca-elicit-error\" role=\"alert\">{}</p>", escape(&error)))
            .unwrap_or_default()
    });
    let on_click = move |ev: leptos::ev::MouseEvent| {
        let Some((_, action)) = region::action_of(&ev) else { return };
        let answer = match action.as_str() {
            "elicit-send" => ElicitAction::Accept,
            "elicit-decline" => ElicitAction::Decline,
            "elicit-cancel" => ElicitAction::Cancel,
            _ => return,
        };
        intents::answer_elicitation(chat, answer);
    };
    view! {
        <div class="ca-part" node_ref=form inner_html=first on:click=on_click></div>
        <div class="ca-part" node_ref=note inner_html=first_note></div>
    }
}
