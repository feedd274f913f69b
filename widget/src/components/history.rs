//! The user's earlier conversations, in place of the chat while open:
//! each with its title and when it was last active; one click goes back.

use leptos::prelude::*;

use crate::intents;
use crate::state::Chat;

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
    let items = move || {
        let items = chat.history.get().unwrap_or_default();
        if items.is_empty() {
            return view! { <p class="ca-empty">"No earlier conversations yet."</p> }.into_any();
        }
        view! {
            <ul class="ca-history-list">
                {items.into_iter().map(|c| {
                    let id = c.id.clone();
                    view! {
                        <li>
                            <button type="button" class="ca-history-item"
                                on:click=move |_| intents::open_conversation(chat, id.clone())>
                                <span class="ca-history-name">{c.title}</span>
                                <span class="ca-history-when">{c.when}</span>
                            </button>
                        </li>
                    }
                }).collect_view()}
            </ul>
        }
        .into_any()
    };
    view! {
        <section class="ca-history" aria-labelledby="ca-history-title">
            <h2 id="ca-history-title" class="ca-history-title" tabindex="-1" node_ref=heading>"Earlier conversations"</h2>
            {items}
            <button type="button" class="ca-button ca-secondary" on:click=move |_| intents::hide_history(chat)>
                "Back to the chat"
            </button>
        </section>
    }
}
