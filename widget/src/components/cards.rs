//! A reply's link cards (a tool result's `display`), drawn as escaped markup.

use crate::html::escape;
use crate::wire::DisplayCard;
use crate::wire::i18n::Msg;

/// Sanitized link cards; every field is text (the server has checked the
/// addresses).
pub(super) fn cards_markup(cards: &[DisplayCard], t: &dyn Fn(Msg) -> String) -> String {
    use std::fmt::Write;
    if cards.is_empty() {
        return String::new();
    }
    let mut html = format!("<ul class=\"ca-cards\" aria-label=\"{}\">", escape(&t(Msg::Results)));
    for card in cards {
        let title = escape(&card.title);
        html.push_str("<li class=\"ca-card\">");
        if let Some(src) = &card.image {
            let _ = write!(
                html,
                "<img class=\"ca-card-image\" src=\"{}\" alt=\"{title}\" loading=\"lazy\" referrerpolicy=\"no-referrer\">",
                escape(src)
            );
        }
        let _ = write!(
            html,
            "<div class=\"ca-card-body\"><a class=\"ca-card-title\" href=\"{}\" target=\"_blank\" \
             rel=\"noopener noreferrer\">{title}</a>",
            escape(&card.url)
        );
        if let Some(subtitle) = &card.subtitle {
            let _ = write!(html, "<p class=\"ca-card-subtitle\">{}</p>", escape(subtitle));
        }
        if !card.badges.is_empty() {
            html.push_str("<ul class=\"ca-badges\">");
            for badge in &card.badges {
                let _ = write!(html, "<li class=\"ca-badge\">{}</li>", escape(badge));
            }
            html.push_str("</ul>");
        }
        html.push_str("</div></li>");
    }
    html.push_str("</ul>");
    html
}

#[cfg(test)]
mod tests {
    use super::super::region::{ESCAPED, HOSTILE, english};
    use super::cards_markup;
    use crate::wire::DisplayCard;

    #[test]
    fn link_cards_escape_every_field() {
        assert_eq!(cards_markup(&[], &english), "", "no cards, no list");
        let card = DisplayCard {
            title: HOSTILE.into(),
            url: format!("https://example.com/?q=\"{HOSTILE}"),
            image: Some(HOSTILE.into()),
            subtitle: Some(HOSTILE.into()),
            badges: vec![HOSTILE.into(), "New".into()],
        };
        let html = cards_markup(&[card], &english);
        assert!(!html.contains("<img src=x") && !html.contains("</p>\""), "{html}");
        assert_eq!(html.matches(ESCAPED).count(), 6, "title, alt, src, href, subtitle, badge: {html}");
        assert!(html.starts_with(r#"<ul class="ca-cards" aria-label="Results"><li class="ca-card"><img"#), "{html}");
        assert!(html.contains(r#"target="_blank" rel="noopener noreferrer""#));
        assert!(html.contains(r#"<li class="ca-badge">New</li>"#));
    }
}
