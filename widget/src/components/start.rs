//! The empty chat's start screen: the workspace's greeting and suggested
//! prompts in the visitor's language, drawn as escaped markup.

use crate::html::escape;
use crate::wire::i18n::Msg;

/// The empty chat: the workspace's greeting and its suggested prompts,
/// which send with one click once the chat is `ready`.
pub(super) fn start_markup(
    greeting: &str,
    prompts: &[String],
    shown: bool,
    ready: bool,
    t: &dyn Fn(Msg) -> String,
) -> String {
    use std::fmt::Write;
    let mut html = format!(
        "<div class=\"ca-start\"{}><p class=\"ca-empty\">{}</p>",
        if shown { "" } else { " hidden" },
        escape(greeting)
    );
    if !prompts.is_empty() {
        let _ = write!(html, "<ul class=\"ca-prompts\" aria-label=\"{}\">", escape(&t(Msg::Suggestions)));
        for (i, prompt) in prompts.iter().enumerate() {
            let _ = write!(
                html,
                "<li><button type=\"button\" class=\"ca-prompt\" data-action=\"prompt\" data-index=\"{i}\" \
                 data-focus=\"prompt-{i}\"{}>{}</button></li>",
                if ready { "" } else { " disabled" },
                escape(prompt)
            );
        }
        html.push_str("</ul>");
    }
    html.push_str("</div>");
    html
}

#[cfg(test)]
mod tests {
    use super::super::region::{ESCAPED, HOSTILE, english};
    use super::start_markup;

    #[test]
    fn the_start_screen_escapes_the_workspaces_words_and_waits_for_the_chat() {
        let prompts = vec![HOSTILE.to_owned(), "Show me the menu".to_owned()];
        let html = start_markup(HOSTILE, &prompts, true, false, &english);
        assert!(html.starts_with(&format!(r#"<div class="ca-start"><p class="ca-empty">{ESCAPED}</p>"#)), "{html}");
        assert_eq!(html.matches(" disabled>").count(), 2, "{html}");
        assert!(
            html.contains(r#"data-action="prompt" data-index="1" data-focus="prompt-1" disabled>Show me the menu"#)
        );
        let ready = start_markup("Hi", &prompts, false, true, &english);
        assert!(ready.starts_with(r#"<div class="ca-start" hidden>"#) && !ready.contains("disabled"), "{ready}");
        assert!(!start_markup("Hi", &[], true, true, &english).contains("ca-prompts"));
    }
}
