//! Where the user writes: Enter sends, Shift+Enter starts a new line; Stop
//! while a reply streams.

use leptos::prelude::*;

use crate::intents;
use crate::state::Chat;
use crate::wire::i18n::Msg;

#[component]
pub fn Composer() -> impl IntoView {
    let chat = expect_context::<Chat>();
    let draft = RwSignal::new(String::new());
    let t = move |m| chat.t(m);
    let submit = move || {
        let text = draft.get_untracked().trim().to_owned();
        if text.is_empty()
            || chat.busy.get_untracked()
            || chat.token.get_untracked().is_none()
            || chat.wait_seconds.get_untracked() > 0
        {
            return;
        }
        draft.set(String::new());
        intents::send(chat, text);
    };
    view! {
        <form class="ca-composer" on:submit=move |ev| {
            ev.prevent_default();
            submit();
        }>
            <label class="ca-sr-only" for="ca-input">{t(Msg::MessageLabel)}</label>
            <textarea id="ca-input" class="ca-input" rows="1" maxlength="8000"
                placeholder=move || t(if chat.token.get().is_some() { Msg::Placeholder } else { Msg::Connecting })
                prop:value=move || draft.get()
                on:input=move |ev| draft.set(event_target_value(&ev))
                on:keydown=move |ev: leptos::ev::KeyboardEvent| {
                    if ev.key() == "Enter" && !ev.shift_key() && !ev.is_composing() {
                        ev.prevent_default();
                        submit();
                    }
                }
            ></textarea>
            // One button: Send, or Stop while a reply streams (focus stays on it).
            <button type="submit" class=move || if chat.busy.get() { "ca-button ca-stop" } else { "ca-button ca-send" }
                disabled=move || !chat.busy.get() && (chat.token.get().is_none() || chat.wait_seconds.get() != 0)
                on:click=move |ev| if chat.busy.get_untracked() {
                    ev.prevent_default();
                    intents::stop(chat);
                }>
                {move || t(if chat.busy.get() { Msg::Stop } else { Msg::Send })}
            </button>
        </form>
    }
}
