//! The user's earlier conversations, in place of the chat while open:
//! each with its title and when it was last active; one click goes back.
//! The list is the client's escaped markup with one delegated listener.

use leptos::prelude::*;

use crate::intents;
use crate::state::Chat;
use crate::wire::i18n::Msg;

#[component]
pub fn HistoryPanel() -> impl IntoView {
    let chat = expect_context::<Chat>();
    let heading = NodeRef::<leptos::html::H2>::new();
    // Opened: focus on its heading, so the list is read from the top.
    Effect::new(move |_| {
        if let Some(heading) = heading.get() {
            let _ = heading.focus();
        }
    });
    let on_click = move |ev: leptos::ev::MouseEvent| {
        use leptos::wasm_bindgen::JsCast;
        let id = ev
            .target()
            .and_then(|t| t.dyn_into::<leptos::web_sys::Element>().ok())
            .and_then(|t| t.closest("button[data-id]").ok().flatten())
            .and_then(|b| b.get_attribute("data-id"));
        if let Some(id) = id {
            intents::open_conversation(chat, id);
        }
    };
    let items = move || chat.history.get().unwrap_or_default();
    view! {
        <section class="ca-history" aria-labelledby="ca-history-title">
            <h2 id="ca-history-title" class="ca-history-title" tabindex="-1" node_ref=heading>{chat.t(Msg::History)}</h2>
            <p class="ca-empty" hidden=move || chat.history.with(|h| h.as_ref().is_some_and(|h| !h.is_empty()))>
                {chat.t(Msg::HistoryEmpty)}
            </p>
            <ul class="ca-history-list" on:click=on_click inner_html=items></ul>
            <button type="button" class="ca-button ca-secondary" on:click=move |_| intents::hide_history(chat)>
                {chat.t(Msg::HistoryBack)}
            </button>
        </section>
    }
}
