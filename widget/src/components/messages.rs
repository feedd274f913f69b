//! The conversation: each message with its text (or sanitized HTML), its
//! link cards and its rich components, and the action card at the end.

use leptos::prelude::*;

use super::action_card::ActionCard;
use super::menu_cart::MenuCart;
use crate::intents;
use crate::state::{Bubble, Chat, Component};
use crate::wire::{DisplayCard, Role};

/// The conversation, as a log: assistive technology hears the
/// announcements, not every streamed token.
#[component]
pub fn MessageList() -> impl IntoView {
    let chat = expect_context::<Chat>();
    let log = NodeRef::<leptos::html::Div>::new();
    // Keep the newest text in view while it streams.
    Effect::new(move |_| {
        let bubbles = chat.bubbles.get();
        if let Some(last) = bubbles.last() {
            last.text.track();
            last.cards.track();
        }
        if let Some(el) = log.get() {
            el.set_scroll_top(el.scroll_height());
        }
    });
    view! {
        <div class="ca-log" role="log" aria-live="off" aria-label="Conversation" node_ref=log tabindex="0"
            hidden=move || chat.history.with(Option::is_some)>
            <Show when=move || chat.bubbles.with(Vec::is_empty)>
                <p class="ca-empty">"Hi! Ask me about this site — for example, “show me the menu”."</p>
            </Show>
            <For each=move || chat.bubbles.get() key=|b| b.id let:bubble>
                <MessageBubble bubble/>
            </For>
            <ActionCard/>
        </div>
    }
}

#[component]
fn MessageBubble(bubble: Bubble) -> impl IntoView {
    let chat = expect_context::<Chat>();
    let (class, who) = match bubble.role {
        Role::User => ("ca-msg ca-user", "You"),
        Role::Assistant | Role::Tool => ("ca-msg ca-assistant", "Assistant"),
    };
    view! {
        <div class=class data-interrupted=move || bubble.interrupted.get().then_some("true")>
            <span class="ca-sr-only">{who}": "</span>
            {move || match bubble.html.get() {
                Some(html) => view! { <div class="ca-md" inner_html=html></div> }.into_any(),
                None => view! { <p class="ca-text">{move || bubble.text.get()}</p> }.into_any(),
            }}
            <CardList cards=bubble.cards/>
            <For each=move || bubble.components.get() key=|c| c.id.clone() let:component>
                <ComponentSlot component/>
            </For>
            <Show when=move || bubble.interrupted.get()>
                <p class="ca-interrupted">"This reply was cut off before it finished."</p>
            </Show>
            {(bubble.role == Role::Assistant).then(|| view! {
                <Show when=move || bubble.html.with(Option::is_some)>
                    <button type="button" class="ca-copy"
                        aria-label=move || if bubble.copied.get() { "Copied reply" } else { "Copy reply" }
                        on:click=move |_| intents::copy_reply(chat, bubble)>
                        {move || if bubble.copied.get() { "Copied" } else { "Copy" }}
                    </button>
                </Show>
            })}
        </div>
    }
}

/// Sanitized link cards; every field is text.
#[component]
fn CardList(cards: RwSignal<Vec<DisplayCard>>) -> impl IntoView {
    view! {
        <Show when=move || cards.with(|c| !c.is_empty())>
            <ul class="ca-cards" aria-label="Results">
                <For each=move || cards.get() key=|c| c.url.clone() let:card>
                    <li class="ca-card">
                        {card.image.clone().map(|src| view! {
                            <img class="ca-card-image" src=src alt=card.title.clone() loading="lazy" referrerpolicy="no-referrer"/>
                        })}
                        <div class="ca-card-body">
                            <a class="ca-card-title" href=card.url.clone() target="_blank" rel="noopener noreferrer">
                                {card.title.clone()}
                            </a>
                            {card.subtitle.clone().map(|s| view! { <p class="ca-card-subtitle">{s}</p> })}
                            <Show when={
                                let empty = card.badges.is_empty();
                                move || !empty
                            }>
                                <ul class="ca-badges">
                                    {card.badges.iter().map(|b| view! { <li class="ca-badge">{b.clone()}</li> }).collect_view()}
                                </ul>
                            </Show>
                        </div>
                    </li>
                </For>
            </ul>
        </Show>
    }
}

/// Renders a component by its kind; a kind this widget does not know shows
/// nothing.
#[component]
fn ComponentSlot(component: Component) -> impl IntoView {
    match component.kind.as_str() {
        "menu_cart" => view! { <MenuCart id=component.id data=component.data/> }.into_any(),
        _ => ().into_any(),
    }
}
