//! Where the user writes: Enter sends, Shift+Enter starts a new line; Stop
//! while a reply streams; the paperclip attaches files.
//!
//! The field is the browser's own (its text is read when sending, never
//! redrawn: an input method's composition survives a reply finishing); the
//! paperclip and the button are markup redrawn by [`region`]. The files'
//! chips, their uploads and dropping or pasting a file are the attachments
//! code's (`js/attach.js`, loaded on first use): Send takes what it
//! uploaded (the field's `data-files`).

use leptos::prelude::*;

use super::region::{self, region};
use crate::html::escape;
use crate::intents;
use crate::state::Chat;
use crate::wire::WidgetBoot;
use crate::wire::i18n::Msg;

#[component]
pub fn Composer() -> impl IntoView {
    let chat = expect_context::<Chat>();
    let t = move |m| chat.t(m);
    let field = NodeRef::<leptos::html::Textarea>::new();
    let submit = move || {
        let Some(field) = field.get_untracked() else { return };
        let text = field.value().trim().to_owned();
        // Without a token or a network the message queues (client::outbox).
        if chat.busy.get_untracked() || chat.wait_seconds.get_untracked() > 0 {
            return;
        }
        // The files the attachments code uploaded (it holds Send back while
        // one is still on its way): `{"ids", "html"}` on the field, taken
        // by removing it.
        let files = field.get_attribute("data-files").unwrap_or_default();
        if text.is_empty() && files.is_empty() {
            return;
        }
        let _ = field.remove_attribute("data-files");
        field.set_value("");
        intents::send(chat, text, files);
    };
    let accept = use_context::<WidgetBoot>().unwrap_or_default().accept;
    let button = NodeRef::new();
    let first_button =
        region(button, move || button_markup(chat.busy.get(), chat.wait_seconds.get() != 0, &accept, &t));
    let on_button = move |ev: leptos::ev::MouseEvent| {
        if region::action_of(&ev).is_some_and(|(_, action)| action == "stop") {
            ev.prevent_default();
            intents::stop(chat);
        }
    };
    view! {
        <form class="ca-composer" on:submit=move |ev| {
            ev.prevent_default();
            submit();
        }>
            <label class="ca-sr-only" for="ca-input">{t(Msg::MessageLabel)}</label>
            // Read-only as the server draws it: written in before the browser
            // code has taken the page over, Enter would only add a line and
            // the words would never go. `crate::hydrate` opens it.
            <textarea id="ca-input" class="ca-input" rows="1" maxlength="8000" node_ref=field readonly=true
                placeholder=move || t(if chat.token.with(Option::is_some) { Msg::Placeholder } else { Msg::Connecting })
                on:keydown=move |ev: leptos::ev::KeyboardEvent| {
                    if ev.key() == "Enter" && !ev.shift_key() && !ev.is_composing() {
                        ev.prevent_default();
                        submit();
                    }
                }
            ></textarea>
            <div class="ca-part" node_ref=button inner_html=first_button on:click=on_button></div>
        </form>
    }
}

/// The paperclip, when the workspace takes attachments (`accept`: their
/// media types): a real file input, reached by Tab. Then one button: Send,
/// or Stop while a reply streams (the same `data-focus`, so focus stays on
/// it). Send waits for a rate limit's countdown; before the chat is
/// connected, or offline, a message queues.
fn button_markup(busy: bool, waiting: bool, accept: &str, t: &dyn Fn(Msg) -> String) -> String {
    let (class, action, label) = if busy { ("ca-stop", "stop", Msg::Stop) } else { ("ca-send", "send", Msg::Send) };
    let attach = escape(&t(Msg::Attach));
    let paperclip = if accept.is_empty() {
        String::new()
    } else {
        format!(
            "<label class=\"ca-attach\" title=\"{attach}\"><input type=\"file\" class=\"ca-file\" data-focus=\"attach\" \
             multiple accept=\"{}\" aria-label=\"{attach}\"></label>",
            escape(accept)
        )
    };
    format!(
        "{paperclip}<button type=\"submit\" class=\"ca-button {class}\" data-action=\"{action}\" data-focus=\"send\"{}>{}</button>",
        if !busy && waiting { " disabled" } else { "" },
        escape(&t(label))
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::components::region::english;

    #[test]
    fn the_button_sends_when_the_chat_can_and_stops_a_streaming_reply() {
        let send = button_markup(false, false, "", &english);
        assert_eq!(
            send,
            "<button type=\"submit\" class=\"ca-button ca-send\" data-action=\"send\" data-focus=\"send\">Send</button>"
        );
        let stop = button_markup(true, false, "", &english);
        assert!(stop.contains("class=\"ca-button ca-stop\" data-action=\"stop\""), "{stop}");
        assert!(stop.ends_with(">Stop</button>") && !stop.contains("disabled"), "{stop}");
        // Counting down a rate limit: Send waits.
        assert!(button_markup(false, true, "", &english).contains(" disabled>"));
        // Stop is never disabled while a reply streams.
        assert!(!button_markup(true, true, "", &english).contains("disabled"));
    }

    #[test]
    fn the_paperclip_is_a_file_input_for_what_the_workspace_takes() {
        let with = button_markup(false, false, "image/png,application/pdf", &english);
        assert!(
            with.starts_with(
                "<label class=\"ca-attach\" title=\"Attach files\"><input type=\"file\" class=\"ca-file\" \
                 data-focus=\"attach\" multiple accept=\"image/png,application/pdf\" aria-label=\"Attach files\"></label>"
            ),
            "{with}"
        );
        assert!(with.ends_with(">Send</button>"), "{with}");
        // A workspace that takes none: no paperclip.
        assert!(!button_markup(false, false, "", &english).contains("ca-file"));
    }

    #[test]
    fn the_buttons_words_are_escaped() {
        let hostile = |_| "<img src=x onerror=alert(1)>".to_owned();
        let markup = button_markup(false, false, "\"><script>", &hostile);
        assert!(markup.contains(">&lt;img src=x onerror=alert(1)&gt;</button>"), "{markup}");
        assert!(markup.contains("accept=\"&quot;&gt;&lt;script&gt;\""), "{markup}");
    }
}
