//! The model's markdown → HTML that is safe to insert into the widget:
//! pulldown-cmark renders, raw HTML is shown as text, and ammonia keeps only
//! formatting and http(s) links that open in a new tab without referrer.

use std::collections::{HashMap, HashSet};
use std::sync::LazyLock;

use pulldown_cmark::{Event, Options, Parser};

/// The formatting tags the HTML may hold; `a` keeps `href` (and the
/// `rel` and `target` set below), `ol` its `start`; nothing else survives.
pub const TAGS: [&str; 25] = [
    "p",
    "br",
    "em",
    "strong",
    "del",
    "code",
    "pre",
    "blockquote",
    "ul",
    "ol",
    "li",
    "a",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "hr",
    "table",
    "thead",
    "tbody",
    "tr",
    "th",
    "td",
];

static CLEANER: LazyLock<ammonia::Builder<'static>> = LazyLock::new(|| {
    // `Builder::empty()` empties only the tags: the default attributes
    // (`title` and `lang` on every tag, `hreflang`, `colspan`…) are cleared
    // here too, so that exactly the attributes named below survive.
    let mut b = ammonia::Builder::empty();
    b.generic_attributes(HashSet::new())
        .tag_attributes(HashMap::new())
        .add_tags(TAGS)
        .add_tag_attributes("a", ["href"])
        .add_tag_attributes("ol", ["start"])
        .url_schemes(HashSet::from(["http", "https"]))
        .url_relative(ammonia::UrlRelative::Deny)
        .link_rel(Some("noopener noreferrer nofollow"))
        .set_tag_attribute_value("a", "target", "_blank");
    b
});

/// Renders `text` (markdown from a model) to sanitized HTML.
pub fn render(text: &str) -> String {
    let mut options = Options::empty();
    options.insert(Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TABLES);
    let events = Parser::new_ext(text, options).map(|event| match event {
        // No raw HTML from a model: show it as the text it is.
        Event::Html(html) | Event::InlineHtml(html) => Event::Text(html),
        other => other,
    });
    let mut html = String::with_capacity(text.len() * 2);
    pulldown_cmark::html::push_html(&mut html, events);
    CLEANER.clean(&html).to_string()
}

#[cfg(test)]
mod tests {
    use super::render;

    /// Found by the `markdown` fuzz target: a link's title survived (and
    /// `lang`, `hreflang`, `colspan` would have), ammonia's defaults.
    #[test]
    fn only_the_attributes_we_name_survive() {
        let html = render("[menu](https://acme.example/menu \"a title\")\n\n| a | b |\n|:--|--:|\n| 1 | 2 |");
        assert!(!html.contains("title") && !html.contains("style") && !html.contains("align"), "{html}");
        assert!(html.contains(r#"<a href="https://acme.example/menu""#), "{html}");
        let list = render("3. three\n4. four");
        assert!(list.contains(r#"<ol start="3">"#), "{list}");
    }

    #[test]
    fn formatting_survives() {
        let html = render("**Lemon Tart** is *tart*.\n\n- one\n- two");
        assert!(html.contains("<strong>Lemon Tart</strong>"));
        assert!(html.contains("<li>one</li>"));
    }

    #[test]
    fn links_open_in_a_new_tab_without_referrer() {
        let html = render("[menu](https://acme.example/menu)");
        assert!(html.contains(r#"href="https://acme.example/menu""#), "{html}");
        assert!(html.contains(r#"rel="noopener noreferrer nofollow""#), "{html}");
        assert!(html.contains(r#"target="_blank""#), "{html}");
    }

    #[test]
    fn script_links_lose_their_href() {
        for md in ["[x](javascript:alert(1))", "[x](JaVaScRiPt:alert(1))", "[x](data:text/html,hi)", "[x](/relative)"] {
            let html = render(md);
            assert!(!html.contains("href"), "{md} → {html}");
        }
    }

    #[test]
    fn raw_html_is_shown_as_text_not_markup() {
        let html = render("hello <script>alert(1)</script> <img src=x onerror=alert(1)>");
        assert!(!html.contains("<script"), "{html}");
        assert!(!html.contains("<img"), "{html}");
        assert!(html.contains("&lt;script&gt;"), "{html}");
    }

    #[test]
    fn markdown_images_are_not_rendered() {
        let html = render("![tracking](https://evil.example/pixel.png)");
        assert!(!html.contains("<img"), "{html}");
    }
}
