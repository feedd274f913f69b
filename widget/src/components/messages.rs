//! The conversation: each message with its text (or sanitized HTML), its
//! link cards and its rich components, and the action card at the end.

use leptos::prelude::*;

use super::action_card::ActionCard;
use super::menu_cart::MenuCart;
use crate::intents;
use crate::state::{Bubble, Chat, Component};
use crate::wire::i18n::Msg;
use crate::wire::{DisplayCard, Rating, Role, WidgetBoot};

/// The conversation, as a log: assistive technology hears the
/// announcements, not every streamed token.
#[component]
pub fn MessageList() -> impl IntoView {
    let chat = expect_context::<Chat>();
    let log = NodeRef::<leptos::html::Div>::new();
    // The workspace's start screen in the visitor's language, or the neutral greeting.
    let boot = use_context::<WidgetBoot>().unwrap_or_default();
    let greeting = boot.greeting.clone().unwrap_or_else(|| chat.t(Msg::Greeting));
    let prompts = boot.prompts.clone();
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
        <div class="ca-log" role="log" aria-live="off" aria-label=chat.t(Msg::Conversation) node_ref=log tabindex="0"
            hidden=move || chat.history.with(Option::is_some)>
            <div class="ca-start" hidden=move || chat.bubbles.with(|b| !b.is_empty())>
                <p class="ca-empty">{greeting}</p>
                {(!prompts.is_empty()).then(|| view! {
                    <ul class="ca-prompts" aria-label=chat.t(Msg::Suggestions)>
                        {prompts.into_iter().map(|prompt| {
                            let text = prompt.clone();
                            view! {
                                <li><button type="button" class="ca-prompt"
                                    disabled=move || chat.token.get().is_none() || chat.busy.get()
                                    on:click=move |_| intents::send(chat, text.clone())>{prompt}</button></li>
                            }
                        }).collect_view()}
                    </ul>
                })}
            </div>
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
    let t = move |m| chat.t(m);
    let (class, who) = match bubble.role {
        Role::User => ("ca-msg ca-user", t(Msg::You)),
        Role::Assistant | Role::Tool => ("ca-msg ca-assistant", t(Msg::Assistant)),
    };
    view! {
        <div class=class data-interrupted=move || bubble.interrupted.get().then_some("true")
            data-stopped=move || bubble.stopped.get().then_some("true")>
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
                <p class="ca-interrupted">{t(Msg::CutOff)}</p>
            </Show>
            {(bubble.role == Role::Assistant).then(|| view! {
                <Show when=move || bubble.html.with(Option::is_some)>
                    <div class="ca-reply-tools">
                        <button type="button" class="ca-copy"
                            aria-label=move || t(if bubble.copied.get() { Msg::CopiedReply } else { Msg::CopyReply })
                            on:click=move |_| intents::copy_reply(chat, bubble)>
                            {move || t(if bubble.copied.get() { Msg::Copied } else { Msg::Copy })}
                        </button>
                        <Thumb bubble rating=Rating::Up/>
                        <Thumb bubble rating=Rating::Down/>
                        // The last reply may be asked for again.
                        <button type="button" class="ca-copy ca-again"
                            hidden=move || !chat.bubbles.with(|b| b.last().is_some_and(|l| l.id == bubble.id))
                            disabled=move || chat.busy.get() on:click=move |_| intents::ask_again(chat)>
                            {t(Msg::AskAgain)}
                        </button>
                    </div>
                    <Show when=move || bubble.commenting.get()>
                        <FeedbackComment bubble/>
                    </Show>
                </Show>
            })}
        </div>
    }
}

/// A thumb up or down on a finished reply: pressed while it is the
/// user's rating (pressing it again takes it back).
#[component]
fn Thumb(bubble: Bubble, rating: Rating) -> impl IntoView {
    let chat = expect_context::<Chat>();
    // One thumb drawn (no emoji font needed), turned over for "down".
    let (label, turn) = match rating {
        Rating::Up => (chat.t(Msg::FeedbackGood), None),
        Rating::Down => (chat.t(Msg::FeedbackBad), Some("rotate(180 12 12)")),
    };
    view! {
        <button type="button" class="ca-thumb" title=label.clone() aria-label=label
            aria-pressed=move || (bubble.rating.get() == Some(rating)).to_string()
            disabled=move || bubble.message_id.with(Option::is_none)
            on:click=move |_| intents::rate(chat, bubble, rating)>
            <svg width="16" height="16" viewBox="0 0 24 24" fill="currentColor" aria-hidden="true">
                <path transform=turn d=THUMB/>
            </svg>
        </button>
    }
}

/// A thumb up (Material Symbols' "thumb_up", Apache-2.0).
const THUMB: &str = "M1 21h4V9H1v12zm22-11c0-1.1-.9-2-2-2h-6.31l.95-4.57.03-.32c0-.41-.17-.79-.44-1.06L14.17 1 \
                     7.59 7.59C7.22 7.95 7 8.45 7 9v10c0 1.1.9 2 2 2h9c.83 0 1.54-.5 1.84-1.22l3.02-7.05c.09-.23.14-.47.14-.73v-2z";

/// What the user adds to their thumb, if anything.
#[component]
fn FeedbackComment(bubble: Bubble) -> impl IntoView {
    let chat = expect_context::<Chat>();
    let text = RwSignal::new(String::new());
    let label = chat.t(Msg::FeedbackComment);
    view! {
        <form class="ca-feedback" on:submit=move |ev| {
            ev.prevent_default();
            intents::comment(chat, bubble, text.get_untracked());
        }>
            <input type="text" class="ca-feedback-comment" maxlength="1000" placeholder=label.clone() aria-label=label
                prop:value=move || text.get() on:input=move |ev| text.set(event_target_value(&ev))/>
            <button type="submit" class="ca-button ca-secondary">{chat.t(Msg::FeedbackSend)}</button>
        </form>
    }
}

/// Sanitized link cards; every field is text.
#[component]
fn CardList(cards: RwSignal<Vec<DisplayCard>>) -> impl IntoView {
    let chat = expect_context::<Chat>();
    view! {
        <Show when=move || cards.with(|c| !c.is_empty())>
            <ul class="ca-cards" aria-label=chat.t(Msg::Results)>
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
