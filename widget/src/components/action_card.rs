//! The change the assistant proposes: the host's preview as plain text,
//! Apply and Cancel (with an optional reason). A delete takes two steps,
//! worded differently, before anything is deleted. A fresh preview of a
//! change that went stale at the app says that it changed.

use leptos::prelude::*;

use crate::intents;
use crate::state::{Answer, Chat};
use crate::wire::ActionStatus;

#[component]
pub fn ActionCard() -> impl IntoView {
    let chat = expect_context::<Chat>();
    let declining = RwSignal::new(false);
    let reason = RwSignal::new(String::new());
    let busy = move || chat.action_busy.get();
    move || {
        chat.action.get().map(|action| {
            let is_delete = action.confirmations_required == 2;
            let confirmed = action.status == ActionStatus::ConfirmedOnce;
            let title = match (is_delete, confirmed) {
                (false, _) if action.replaces.is_some() => "It changed: apply it as it is now?",
                (false, _) => "Apply this change?",
                (true, false) => "Delete this?",
                (true, true) => "This cannot be undone",
            };
            let buttons = if declining.get() {
                view! {
                    <label class="ca-sr-only" for="ca-reason">"Reason (optional)"</label>
                    <input id="ca-reason" class="ca-reason" type="text" maxlength="500" placeholder="Reason (optional)"
                        prop:value=move || reason.get() on:input=move |ev| reason.set(event_target_value(&ev))/>
                    <div class="ca-action-buttons">
                        <button type="button" class="ca-button" disabled=busy on:click=move |_| {
                            let text = reason.get_untracked().trim().to_owned();
                            declining.set(false);
                            reason.set(String::new());
                            intents::answer(chat, Answer::Cancel, (!text.is_empty()).then_some(text));
                        }>"Cancel the change"</button>
                        <button type="button" class="ca-button ca-secondary" disabled=busy
                            on:click=move |_| declining.set(false)>"Back"</button>
                    </div>
                }
                .into_any()
            } else {
                let (primary, answer) = match (is_delete, confirmed) {
                    (false, _) => ("Apply", Answer::Apply),
                    (true, false) => ("Delete…", Answer::Confirm),
                    (true, true) => ("Yes, delete permanently", Answer::Apply),
                };
                let secondary = if is_delete && confirmed { "Keep it" } else { "Cancel" };
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
                        <p class="ca-action-warning">"This permanently deletes it. Are you sure?"</p>
                    })}
                    {move || chat.action_error.get().map(|e| view! { <p class="ca-action-error" role="alert">{e}</p> })}
                    {buttons}
                </section>
            }
        })
    }
}
