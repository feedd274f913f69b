//! The change the assistant proposes: the host's preview as plain text,
//! Apply and Cancel (with an optional reason). A delete takes two steps,
//! worded differently, before anything is deleted. A fresh preview of a
//! change that went stale at the app says that it changed. Offline, the
//! card says that answering needs the network.
//!
//! Drawn as markup with one delegated listener (`region`); focus stays on
//! the control the user is on, Cancel's reason field takes it when it
//! opens, and the card itself holds it while its buttons are busy.

use leptos::prelude::*;

use super::region::{self, region};
use crate::html::escape;
use crate::intents;
use crate::state::{Answer, Chat};
use crate::wire::i18n::Msg;
use crate::wire::{ActionStatus, PendingAction};

#[component]
pub fn ActionCard() -> impl IntoView {
    let chat = expect_context::<Chat>();
    let declining = RwSignal::new(false);
    let card = NodeRef::new();
    let first = region(card, move || {
        let t = move |m| chat.t(m);
        let state = Card {
            declining: declining.get(),
            // Also while the turn that proposed it is still streaming its
            // tail: an answer then is not sent (`intents::answer`), so a
            // click must not look taken (it was lost, and nothing said so).
            busy: chat.action_busy.get() || chat.busy.get(),
            error: chat.action_error.get(),
            offline: chat.offline.get(),
        };
        chat.action.with(|action| action.as_ref().map(|a| markup(a, &state, &t)).unwrap_or_default())
    });
    let on_click = move |ev: leptos::ev::MouseEvent| {
        let Some((_, action)) = region::action_of(&ev) else { return };
        match action.as_str() {
            "answer" => {
                // A delete's first step confirms; every last step applies.
                let first_step = chat.action.with_untracked(|a| a.as_ref().is_some_and(|a| steps(a).1));
                intents::answer(chat, if first_step { Answer::Confirm } else { Answer::Apply }, None);
            }
            "decline" => declining.set(true),
            "back" => declining.set(false),
            "cancel" => {
                use leptos::wasm_bindgen::JsCast;
                let reason = card
                    .get_untracked()
                    .and_then(|c| c.query_selector(".ca-reason").ok().flatten())
                    .and_then(|i| i.dyn_into::<leptos::web_sys::HtmlInputElement>().ok())
                    .map(|i| i.value().trim().to_owned())
                    .unwrap_or_default();
                declining.set(false);
                intents::answer(chat, Answer::Cancel, (!reason.is_empty()).then_some(reason));
            }
            _ => {}
        }
    };
    // A new action starts without the reason field.
    Effect::new(move |_| {
        chat.action.track();
        declining.set(false);
    });
    view! { <div class="ca-part" node_ref=card inner_html=first on:click=on_click></div> }
}

/// What the card shows besides the action itself.
struct Card {
    /// The user chose Cancel: the reason field and the final Cancel.
    declining: bool,
    /// An answer is on its way: the buttons wait.
    busy: bool,
    error: Option<String>,
    /// The network is down: answering has to wait for it.
    offline: bool,
}

/// (a delete, its first step), from the action's count of confirmations
/// and its status.
fn steps(action: &PendingAction) -> (bool, bool) {
    let delete = action.confirmations_required == 2;
    (delete, delete && action.status != ActionStatus::ConfirmedOnce)
}

/// The card's markup, in the words of `t`; the preview is the host's text.
fn markup(action: &PendingAction, card: &Card, t: &dyn Fn(Msg) -> String) -> String {
    use std::fmt::Write;
    let word = |m: Msg| escape(&t(m));
    let (delete, first_step) = steps(action);
    let title = match (delete, first_step) {
        (false, _) if action.replaces.is_some() => Msg::ActionChanged,
        (false, _) => Msg::ActionApplyQuestion,
        (true, true) => Msg::ActionDeleteQuestion,
        (true, false) => Msg::ActionFinal,
    };
    let disabled = if card.busy { " disabled" } else { "" };
    let mut html = format!(
        "<section id=\"ca-action\" class=\"ca-action{}\" role=\"group\" aria-labelledby=\"ca-action-title\" \
         tabindex=\"-1\" data-focus-home><h2 id=\"ca-action-title\" class=\"ca-action-title\">{}</h2>\
         <p class=\"ca-action-preview\">{}</p>",
        if delete { " ca-action-delete" } else { "" },
        word(title),
        escape(&action.preview)
    );
    if delete && !first_step {
        let _ = write!(html, "<p class=\"ca-action-warning\">{}</p>", word(Msg::ActionDeleteWarning));
    }
    if card.offline {
        let _ = write!(html, "<p class=\"ca-action-offline\">{}</p>", word(Msg::ActionOffline));
    }
    if let Some(error) = &card.error {
        let _ = write!(html, "<p class=\"ca-action-error\" role=\"alert\">{}</p>", escape(error));
    }
    if card.declining {
        let reason = word(Msg::Reason);
        let _ = write!(
            html,
            "<label class=\"ca-sr-only\" for=\"ca-reason\">{reason}</label>\
             <input id=\"ca-reason\" class=\"ca-reason\" type=\"text\" maxlength=\"500\" placeholder=\"{reason}\" \
             data-focus=\"decline\" data-keep=\"reason\">\
             <div class=\"ca-action-buttons\">\
             <button type=\"button\" class=\"ca-button\" data-action=\"cancel\" data-focus=\"cancel\"{disabled}>{}</button>\
             <button type=\"button\" class=\"ca-button ca-secondary\" data-action=\"back\" data-focus=\"decline\"{disabled}>{}</button></div>",
            word(Msg::CancelChange),
            word(Msg::Back)
        );
    } else {
        let primary = match (delete, first_step) {
            (false, _) => Msg::Apply,
            (true, true) => Msg::Delete,
            (true, false) => Msg::DeletePermanently,
        };
        let secondary = if delete && !first_step { Msg::Keep } else { Msg::Cancel };
        let _ = write!(
            html,
            "<div class=\"ca-action-buttons\">\
             <button type=\"button\" class=\"ca-button{}\" data-action=\"answer\" data-focus=\"answer\"{disabled}>{}</button>\
             <button type=\"button\" class=\"ca-button ca-secondary\" data-action=\"decline\" data-focus=\"decline\"{disabled}>{}</button></div>",
            if delete { " ca-danger" } else { "" },
            word(primary),
            word(secondary)
        );
    }
    html.push_str("</section>");
    html
}

#[cfg(test)]
mod tests {
    use super::super::region::english;
    use super::{Card, markup};
    use crate::wire::{ActionStatus, PendingAction, Verb};

    fn action(confirmations: u8, status: ActionStatus) -> PendingAction {
        PendingAction {
            action_id: "a1".into(),
            tool: "update_item".into(),
            verb: if confirmations == 2 { Verb::Delete } else { Verb::Update },
            preview: r#"Rename "<b>Soup</b>" & more"#.into(),
            #[cfg(feature = "ssr")]
            arguments: serde_json::json!({}),
            confirmations_required: confirmations,
            expires_at: "2026-12-01T00:00:00Z".into(),
            status,
            replaces: None,
        }
    }

    fn card() -> Card {
        Card { declining: false, busy: false, error: None, offline: false }
    }

    #[test]
    fn a_change_shows_the_hosts_preview_as_text_with_apply_and_cancel() {
        let html = markup(&action(1, ActionStatus::Pending), &card(), &english);
        assert!(html.starts_with(r#"<section id="ca-action" class="ca-action" role="group""#), "{html}");
        assert!(html.contains("Rename &quot;&lt;b&gt;Soup&lt;/b&gt;&quot; &amp; more"), "{html}");
        assert!(html.contains(r#"data-action="answer" data-focus="answer">Apply</button>"#), "{html}");
        assert!(html.contains(r#"data-action="decline" data-focus="decline">Cancel</button>"#), "{html}");
        assert!(!html.contains("ca-action-warning") && !html.contains("ca-danger"));
    }

    #[test]
    fn a_delete_takes_two_differently_worded_steps() {
        let first = markup(&action(2, ActionStatus::Pending), &card(), &english);
        assert!(first.contains(r#"class="ca-action ca-action-delete""#) && first.contains("ca-button ca-danger"));
        assert!(!first.contains("ca-action-warning"), "{first}");
        let last = markup(&action(2, ActionStatus::ConfirmedOnce), &card(), &english);
        assert!(last.contains("ca-action-warning"), "{last}");
        let (first_button, last_button) =
            (first.split("data-focus=\"answer\">").nth(1), last.split("data-focus=\"answer\">").nth(1));
        assert_ne!(first_button.map(|b| &b[..10]), last_button.map(|b| &b[..10]), "the final button says more");
    }

    #[test]
    fn cancel_asks_for_a_reason_and_busy_buttons_wait() {
        let html = markup(
            &action(1, ActionStatus::Pending),
            &Card { declining: true, busy: true, error: Some("<gone>".into()), offline: true },
            &english,
        );
        assert!(html.contains(r#"<input id="ca-reason" class="ca-reason" type="text" maxlength="500""#), "{html}");
        assert!(
            html.contains(r#"data-focus="decline" data-keep="reason">"#),
            "the field takes focus from Cancel and keeps its text"
        );
        assert!(html.contains(r#"<p class="ca-action-error" role="alert">&lt;gone&gt;</p>"#), "{html}");
        assert!(html.contains(r#"<p class="ca-action-offline">You&#39;re offline: answering needs the network.</p>"#));
        assert_eq!(html.matches(" disabled>").count(), 2, "{html}");
        assert!(html.contains(r#"data-action="cancel""#) && html.contains(r#"data-action="back""#));
    }
}
