//! The top of the widget, drawn as markup (`region`): the Caddie host bar
//! (caddie-tool-contract-ct1.md §6) worn by the full-page app launched from
//! Caddie, the header with its buttons, and Caddie's guided introduction.

use crate::html::escape;
use crate::wire::CaddieBar;
use crate::wire::i18n::{Msg, fill};

/// What the top shows.
pub struct Top<'a> {
    pub title: &'a str,
    /// The built-in demo model answers: the header says so.
    pub demo: bool,
    /// Launched from Caddie as a full page: the host bar and Done.
    pub full_page: bool,
    /// Framed in the hub's project page: neither bar nor Done nor close.
    pub framed: bool,
    pub bar: &'a CaddieBar,
    /// A turn runs: History and New wait.
    pub busy: bool,
    /// The guided introduction is open.
    pub touring: bool,
}

/// The top's markup, in the words of `t`. Controls carry `data-action`
/// (`history`, `new`, `close`, `skip`); Done and Finish are links, so they
/// work before the page is hydrated.
pub fn markup(top: &Top, t: &dyn Fn(Msg) -> String) -> String {
    use std::fmt::Write;
    let word = |m: Msg| escape(&t(m));
    let mut html = String::new();
    if top.full_page && !top.framed {
        // 40 px: “Part of {project} on Caddie · ← Back to project”, the name in bold where the language puts it.
        let _ = write!(
            html,
            "<nav class=\"ca-hostbar\" aria-label=\"{}\"><span class=\"ca-hostbar-text\">{} · </span>\
             <a class=\"ca-hostbar-back\" href=\"{}\">{}</a></nav>",
            word(Msg::HostbarLabel),
            fill(
                &word(Msg::HostbarPartOf),
                "{project}",
                &format!("<strong>{}</strong>", escape(&top.bar.project_name))
            ),
            escape(&top.bar.return_url),
            word(Msg::HostbarBack),
        );
    }
    let _ = write!(html, "<header class=\"ca-header\"><h1 class=\"ca-title\">{}</h1>", escape(top.title));
    if top.demo {
        let _ =
            write!(html, "<span class=\"ca-demo\" title=\"{}\">{}</span>", word(Msg::DemoHint), word(Msg::DemoBadge));
    }
    let disabled = if top.busy { " disabled" } else { "" };
    for (action, class, icon, label) in
        [("history", "ca-history-button", "☰", Msg::History), ("new", "ca-new", "+", Msg::NewConversation)]
    {
        let label = word(label);
        let _ = write!(
            html,
            "<button type=\"button\" class=\"ca-icon-button {class}\" title=\"{label}\" data-action=\"{action}\" \
             data-focus=\"{action}\"{disabled}><span aria-hidden=\"true\">{icon}</span>\
             <span class=\"ca-sr-only\">{label}</span></button>"
        );
    }
    if top.full_page && !top.framed {
        let _ = write!(
            html,
            "<a class=\"ca-done\" href=\"{}\">{}</a>",
            escape(&project_url(top.bar, false)),
            word(Msg::Done)
        );
    } else if !top.framed {
        let _ = write!(
            html,
            "<button type=\"button\" class=\"ca-icon-button ca-close\" data-action=\"close\" data-focus=\"close\">\
             <span aria-hidden=\"true\">×</span><span class=\"ca-sr-only\">{}</span></button>",
            word(Msg::CloseChat)
        );
    }
    html.push_str("</header>");
    if top.touring {
        // Framed, the tour's close is the hub's page itself.
        let _ = write!(
            html,
            "<section class=\"ca-tour\" role=\"region\" aria-labelledby=\"ca-tour-title\">\
             <h2 id=\"ca-tour-title\">{}</h2><p>{}</p><div class=\"ca-action-buttons\">\
             <a class=\"ca-button ca-link-button\" href=\"{}\"{}>{}</a>\
             <button type=\"button\" class=\"ca-button ca-secondary\" data-action=\"skip\">{}</button></div></section>",
            word(Msg::TourTitle),
            word(Msg::TourText),
            escape(&project_url(top.bar, true)),
            if top.framed { " target=\"_top\"" } else { "" },
            word(Msg::TourFinish),
            word(Msg::TourSkip),
        );
    }
    html
}

/// `returnToProject()` as a link, so it works before the page is hydrated:
/// the hub's project page, with `?tour=done` at the end of the guided
/// introduction.
fn project_url(bar: &CaddieBar, tour_done: bool) -> String {
    let url = bar.return_url.clone();
    if !tour_done || url.is_empty() {
        return url;
    }
    let separator = if url.contains('?') { '&' } else { '?' };
    format!("{url}{separator}tour=done")
}

#[cfg(test)]
mod tests {
    use super::super::region::english;
    use super::{Top, markup};
    use crate::wire::CaddieBar;

    fn bar() -> CaddieBar {
        CaddieBar {
            project_name: "<b>Apollo</b> & co".into(),
            return_url: "https://hub.example/p/1?x=\"y\"".into(),
            ..CaddieBar::default()
        }
    }

    fn top(bar: &CaddieBar) -> Top<'_> {
        Top { title: "Acme <Bistro>", demo: false, full_page: false, framed: false, bar, busy: false, touring: false }
    }

    #[test]
    fn an_embedded_widget_has_a_header_with_close_and_no_host_bar() {
        let bar = bar();
        let html = markup(&top(&bar), &english);
        assert!(
            html.starts_with(r#"<header class="ca-header"><h1 class="ca-title">Acme &lt;Bistro&gt;</h1>"#),
            "{html}"
        );
        assert!(html.contains(r#"data-action="close""#) && !html.contains("ca-hostbar") && !html.contains("ca-done"));
        assert!(!html.contains("disabled") && !html.contains("ca-demo") && !html.contains("ca-tour"), "{html}");
        let busy = markup(&Top { busy: true, demo: true, ..top(&bar) }, &english);
        assert_eq!(busy.matches(" disabled>").count(), 2, "History and New wait for the turn: {busy}");
        assert!(busy.contains(r#"<span class="ca-demo""#));
    }

    #[test]
    fn the_full_page_app_wears_the_host_bar_and_done_goes_back_to_the_project() {
        let bar = bar();
        let html = markup(&Top { full_page: true, touring: true, ..top(&bar) }, &english);
        assert!(html.starts_with(r#"<nav class="ca-hostbar""#), "{html}");
        assert!(html.contains("<strong>&lt;b&gt;Apollo&lt;/b&gt; &amp; co</strong>"), "{html}");
        assert!(html.contains(r#"<a class="ca-done" href="https://hub.example/p/1?x=&quot;y&quot;">"#), "{html}");
        assert!(html.contains(r#"href="https://hub.example/p/1?x=&quot;y&quot;&amp;tour=done">"#), "{html}");
        assert!(!html.contains("ca-close") && !html.contains("_top"));
        let framed = markup(&Top { full_page: true, framed: true, touring: true, ..top(&bar) }, &english);
        assert!(
            !framed.contains("ca-hostbar") && !framed.contains("ca-done") && !framed.contains("ca-close"),
            "{framed}"
        );
        assert!(framed.contains(r#" target="_top">"#), "framed, the tour ends on the hub's page");
    }
}
