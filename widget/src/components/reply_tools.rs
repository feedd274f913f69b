//! The controls under a message: where a message of the user's is on its
//! way (Sending…, waiting for the network, Not sent with Retry), the
//! cut-off note, and on a finished reply Copy, the thumbs, Ask again and
//! the comment form, drawn as escaped markup.

use crate::html::escape;
use crate::state::Delivery;
use crate::wire::Rating;
use crate::wire::i18n::Msg;

/// What the controls under a message show.
pub(super) struct Tools {
    /// The stream broke before the message was finished.
    pub(super) interrupted: bool,
    /// A finished reply of the assistant: it gets the controls.
    pub(super) finished: bool,
    pub(super) copied: bool,
    pub(super) rating: Option<Rating>,
    /// The server has named the reply (feedback needs its id).
    pub(super) rateable: bool,
    /// The last message: it may be asked for again.
    pub(super) last: bool,
    pub(super) busy: bool,
    pub(super) commenting: bool,
    /// A message of the user's the server has not taken yet.
    pub(super) delivery: Option<Delivery>,
}

/// A thumb up (Material Symbols' "thumb_up", Apache-2.0); turned over for down.
const THUMB: &str = "M1 21h4V9H1v12zm22-11c0-1.1-.9-2-2-2h-6.31l.95-4.57.03-.32c0-.41-.17-.79-.44-1.06L14.17 1 \
                     7.59 7.59C7.22 7.95 7 8.45 7 9v10c0 1.1.9 2 2 2h9c.83 0 1.54-.5 1.84-1.22l3.02-7.05c.09-.23.14-.47.14-.73v-2z";

/// The cut-off note, and on a finished reply: Copy, the thumbs (pressed
/// while they are the user's rating), Ask again on the last one, and the
/// comment field after a thumb.
pub(super) fn tools_markup(tools: &Tools, t: &dyn Fn(Msg) -> String) -> String {
    use std::fmt::Write;
    let word = |m: Msg| escape(&t(m));
    let mut html = String::new();
    if let Some(delivery) = tools.delivery {
        let (class, m) = match delivery {
            Delivery::Sending => ("", Msg::Sending),
            Delivery::Queued => ("", Msg::Queued),
            Delivery::NotSent => (" ca-not-sent", Msg::NotSent),
        };
        let _ = write!(html, "<p class=\"ca-delivery{class}\">{}", word(m));
        if delivery == Delivery::NotSent {
            let _ = write!(
                html,
                " <button type=\"button\" class=\"ca-copy\" data-action=\"resend\" data-focus=\"resend\">{}</button>",
                word(Msg::Retry)
            );
        }
        html.push_str("</p>");
    }
    if tools.interrupted {
        let _ = write!(html, "<p class=\"ca-interrupted\">{}</p>", word(Msg::CutOff));
    }
    if !tools.finished {
        return html;
    }
    let (copy, copy_label) = if tools.copied { (Msg::Copied, Msg::CopiedReply) } else { (Msg::Copy, Msg::CopyReply) };
    let _ = write!(
        html,
        "<div class=\"ca-reply-tools\"><button type=\"button\" class=\"ca-copy\" data-action=\"copy\" \
         data-focus=\"copy\" aria-label=\"{}\">{}</button>",
        word(copy_label),
        word(copy)
    );
    for (rating, label, turn) in
        [(Rating::Up, Msg::FeedbackGood, ""), (Rating::Down, Msg::FeedbackBad, " transform=\"rotate(180 12 12)\"")]
    {
        let label = word(label);
        let _ = write!(
            html,
            "<button type=\"button\" class=\"ca-thumb\" data-action=\"rate-{0}\" data-focus=\"rate-{0}\" \
             title=\"{label}\" aria-label=\"{label}\" aria-pressed=\"{1}\"{2}>\
             <svg width=\"16\" height=\"16\" viewBox=\"0 0 24 24\" fill=\"currentColor\" aria-hidden=\"true\">\
             <path{turn} d=\"{THUMB}\"></path></svg></button>",
            rating.as_str(),
            tools.rating == Some(rating),
            if tools.rateable { "" } else { " disabled" },
        );
    }
    let _ = write!(
        html,
        "<button type=\"button\" class=\"ca-copy ca-again\" data-action=\"again\" data-focus=\"again\"{}{}>{}</button></div>",
        if tools.last { "" } else { " hidden" },
        if tools.busy { " disabled" } else { "" },
        word(Msg::AskAgain)
    );
    if tools.commenting {
        let label = word(Msg::FeedbackComment);
        let _ = write!(
            html,
            "<form class=\"ca-feedback\"><input type=\"text\" class=\"ca-feedback-comment\" maxlength=\"1000\" \
             placeholder=\"{label}\" aria-label=\"{label}\" data-focus=\"comment\" data-keep=\"comment\">\
             <button type=\"submit\" class=\"ca-button ca-secondary\" data-focus=\"comment-send\">{}</button></form>",
            word(Msg::FeedbackSend)
        );
    }
    html
}

#[cfg(test)]
mod tests {
    use super::super::region::english;
    use super::{Tools, tools_markup};
    use crate::wire::Rating;

    fn tools() -> Tools {
        Tools {
            interrupted: false,
            finished: true,
            copied: false,
            rating: None,
            rateable: true,
            last: true,
            busy: false,
            commenting: false,
            delivery: None,
        }
    }

    #[test]
    fn a_finished_reply_gets_its_tools_and_a_streaming_one_none() {
        assert_eq!(tools_markup(&Tools { finished: false, ..tools() }, &english), "");
        let cut = tools_markup(&Tools { finished: false, interrupted: true, ..tools() }, &english);
        assert!(cut.starts_with(r#"<p class="ca-interrupted">"#) && !cut.contains("ca-reply-tools"), "{cut}");

        let html = tools_markup(&tools(), &english);
        assert!(
            html.contains(r#"data-action="copy" data-focus="copy" aria-label="Copy reply">Copy</button>"#),
            "{html}"
        );
        assert_eq!(html.matches(r#"aria-pressed="false""#).count(), 2);
        assert!(!html.contains(" disabled") && !html.contains(" hidden") && !html.contains("ca-feedback"), "{html}");
        assert!(html.contains(r#"transform="rotate(180 12 12)""#), "the thumb down is the thumb turned over");
    }

    #[test]
    fn the_tools_show_the_users_rating_and_what_waits() {
        let html =
            tools_markup(&Tools { rating: Some(Rating::Down), copied: true, commenting: true, ..tools() }, &english);
        assert!(html.contains(r#"data-action="rate-down" data-focus="rate-down" title="Bad reply" aria-label="Bad reply" aria-pressed="true""#), "{html}");
        assert!(html.contains(r#"data-action="rate-up" data-focus="rate-up" title="Good reply" aria-label="Good reply" aria-pressed="false""#), "{html}");
        assert!(html.contains(">Copied</button>"), "{html}");
        assert!(html.contains(r#"<form class="ca-feedback"><input type="text" class="ca-feedback-comment""#), "{html}");
        assert!(html.contains(r#"data-keep="comment""#), "what the user types survives a redraw");

        let html = tools_markup(&Tools { rateable: false, last: false, busy: true, ..tools() }, &english);
        assert_eq!(html.matches(r#"aria-pressed="false" disabled>"#).count(), 2, "both thumbs wait for the id: {html}");
        assert!(html.contains(r#"data-action="again" data-focus="again" hidden disabled>"#), "{html}");
    }

    #[test]
    fn a_message_on_its_way_says_so_and_one_not_sent_offers_retry() {
        use crate::state::Delivery;
        let mine = |delivery| Tools { finished: false, delivery: Some(delivery), ..tools() };
        assert_eq!(tools_markup(&mine(Delivery::Sending), &english), r#"<p class="ca-delivery">Sending…</p>"#);
        assert_eq!(
            tools_markup(&mine(Delivery::Queued), &english),
            r#"<p class="ca-delivery">Waiting for the network</p>"#
        );
        let failed = tools_markup(&mine(Delivery::NotSent), &english);
        assert_eq!(
            failed,
            r#"<p class="ca-delivery ca-not-sent">Not sent <button type="button" class="ca-copy" data-action="resend" data-focus="resend">Retry</button></p>"#
        );
        assert_eq!(tools_markup(&Tools { finished: false, ..tools() }, &english), "", "a message taken says nothing");
    }
}
