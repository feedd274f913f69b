//! The chat's error: what went wrong, a rate limit's countdown and Retry;
//! without one, that the widget is offline.
//!
//! The alert is drawn when the error comes and stays as it is until the
//! error changes, so a screen reader says it once; the countdown and
//! Retry's waiting change in place (they are not the alert's words: the
//! countdown is hidden from screen readers, and the end of the wait is
//! said once by the chat's live region).

use crate::html::escape;
use crate::state::Chat;
use crate::wire::i18n::Msg;

/// The alert for `error`, with `wait` seconds left; without one, offline,
/// the note that new messages wait for the network.
pub fn markup(error: Option<&str>, wait: &str, offline: bool, t: &dyn Fn(Msg) -> String) -> String {
    let Some(message) = error else {
        return if offline {
            format!("<p class=\"ca-offline\" role=\"status\">{}</p>", escape(&t(Msg::Offline)))
        } else {
            String::new()
        };
    };
    format!(
        "<div class=\"ca-error\" role=\"alert\"><span>{}<span class=\"ca-wait\" aria-hidden=\"true\">{}</span></span>\
         <button type=\"button\" class=\"ca-retry\" data-action=\"retry\"{}>{}</button></div>",
        escape(message),
        escape(wait),
        if wait.is_empty() { "" } else { " disabled" },
        escape(&t(Msg::Retry))
    )
}

/// What the countdown says with `seconds` left (nothing at 0).
pub fn wait_text(chat: Chat, seconds: u32) -> String {
    match seconds {
        0 => String::new(),
        n => format!(" {}", chat.words.fill(Msg::Wait, "{n}", &n.to_string())),
    }
}

/// Counts down in the drawn alert, and lets Retry go when the wait is over.
#[cfg(feature = "hydrate")]
pub fn count_down(chat: Chat, alert: leptos::prelude::NodeRef<leptos::html::Div>) {
    use leptos::prelude::*;
    Effect::new(move |_| {
        let seconds = chat.wait_seconds.get();
        chat.error.track();
        let Some(alert) = alert.get() else { return };
        if let Ok(Some(wait)) = alert.query_selector(".ca-wait") {
            wait.set_text_content(Some(&wait_text(chat, seconds)));
        }
        if let Ok(Some(retry)) = alert.query_selector(".ca-retry") {
            let _ = retry.toggle_attribute_with_force("disabled", seconds != 0);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::components::region::english;

    #[test]
    fn no_error_draws_nothing() {
        assert_eq!(markup(None, "", false, &english), "");
    }

    #[test]
    fn the_alert_says_the_error_and_offers_retry_once_the_wait_is_over() {
        let ready = markup(Some("The assistant could not answer."), "", false, &english);
        assert_eq!(
            ready,
            "<div class=\"ca-error\" role=\"alert\"><span>The assistant could not answer.<span class=\"ca-wait\" \
             aria-hidden=\"true\"></span></span><button type=\"button\" class=\"ca-retry\" data-action=\"retry\">\
             Retry</button></div>"
        );
        let waiting = markup(Some("Too many messages."), " You can send again in 5 s.", true, &english);
        assert!(waiting.contains("aria-hidden=\"true\"> You can send again in 5 s.</span>"), "{waiting}");
        assert!(waiting.contains("data-action=\"retry\" disabled>Retry</button>"), "{waiting}");
    }

    #[test]
    fn the_errors_words_are_escaped() {
        let hostile = markup(Some("<img src=x onerror=alert(1)>"), "\"><script>", false, &english);
        assert!(hostile.contains("<span>&lt;img src=x onerror=alert(1)&gt;<span"), "{hostile}");
        assert!(!hostile.contains("<script>") && !hostile.contains("<img"), "{hostile}");
    }

    #[test]
    fn offline_without_an_error_says_that_messages_wait() {
        assert_eq!(
            markup(None, "", true, &english),
            "<p class=\"ca-offline\" role=\"status\">You&#39;re offline. New messages will be sent when you&#39;re back online.</p>"
        );
    }
}
