//! The change the assistant proposes: the host's preview as plain text,
//! Apply and Cancel (with an optional reason). A delete takes two steps,
//! worded differently, before anything is deleted. A fresh preview of a
//! change that went stale at the app says that it changed.

use leptos::prelude::*;

use crate::intents;
use crate::state::{Answer, Chat};
use crate::wire::ActionStatus;
use crate::wire::i18n::Msg;

#[component]
pub fn ActionCard() -> impl IntoView {
    let chat = expect_context::<Chat>();
    let declining = RwSignal::new(false);
    let reason = RwSignal::new(String::new());
    let busy = move || chat.action_busy.get();
    let t = move |m| chat.t(m);
    move || {
        chat.action.get().map(|action| {
            let is_delete = action.confirmations_required == 2;
            let confirmed = action.status == ActionStatus::ConfirmedOnce;
            let title = match (is_delete, confirmed) {
                (false, _) if action.replaces.is_some() => t(Msg::ActionChanged),
                (false, _) => t(Msg::ActionApplyQuestion),
                (true, false) => t(Msg::ActionDeleteQuestion),
                (true, true) => t(Msg::ActionFinal),
            };
            let buttons = if declining.get() {
                view! {
                    <label class="ca-sr-only" for="ca-reason">{t(Msg::Reason)}</label>
                    <input id="ca-reason" class="ca-reason" type="text" maxlength="500" placeholder=t(Msg::Reason)
                        prop:value=move || reason.get() on:input=move |ev| reason.set(event_target_value(&ev))/>
                    <div class="ca-action-buttons">
                        <button type="button" class="ca-button" disabled=busy on:click=move |_| {
                            let text = reason.get_untracked().trim().to_owned();
                            declining.set(false);
                            reason.set(String::new());
                            intents::answer(chat, Answer::Cancel, (!text.is_empty()).then_some(text));
                        }>{t(Msg::CancelChange)}</button>
                        <button type="button" class="ca-button ca-secondary" disabled=busy
                            on:click=move |_| declining.set(false)>{t(Msg::Back)}</button>
                    </div>
                }
                .into_any()
            } else {
                let (primary, answer) = match (is_delete, confirmed) {
                    (false, _) => (t(Msg::Apply), Answer::Apply),
                    (true, false) => (t(Msg::Delete), Answer::Confirm),
                    (true, true) => (t(Msg::DeletePermanently), Answer::Apply),
                };
                let secondary = t(if is_delete && confirmed { Msg::Keep } else { Msg::Cancel });
                view! {
                    <div class="ca-action-buttons">
                        <button type="button" class="ca-button" class:ca-danger=is_delete disabled=busy
                            on:click=move |_| intents::answer(chat, answer, None)>{primary}</button>
                        <button type="button" class="ca-button ca-secondary" disabled=busy
                            on:click=move |_| declining.set(true)>{secondary}</button>
                    </div>
                }
                .into_any()
            };
            view! {
                <section id="ca-action" class="ca-action" class:ca-action-delete=is_delete role="group"
                    aria-labelledby="ca-action-title" tabindex="-1">
                    <h2 id="ca-action-title" class="ca-action-title">{title}</h2>
                    <p class="ca-action-preview">{action.preview.clone()}</p>
                    {(is_delete && confirmed).then(|| view! {
                        <p class="ca-action-warning">{t(Msg::ActionDeleteWarning)}</p>
                    })}
                    {move || chat.action_error.get().map(|e| view! { <p class="ca-action-error" role="alert">{e}</p> })}
                    {buttons}
                </section>
            }
        })
    }
}
