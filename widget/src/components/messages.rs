//! The conversation: each message with its text (or sanitized HTML), its
//! link cards and its rich components, and the action card at the end.

use leptos::prelude::*;

use super::action_card::ActionCard;
use super::menu_cart;
use super::region::{self, region};
use crate::html::escape;
use crate::intents;
use crate::state::{Bubble, Chat, Component};
use crate::wire::i18n::Msg;
use crate::wire::{DisplayCard, Rating, Role, WidgetBoot};

/// The conversation, as a log: assistive technology hears the
/// announcements, not every streamed token.
#[component]
pub fn MessageList() -> impl IntoView {
    let chat = expect_context::<Chat>();
    let log = NodeRef::<leptos::html::Div>::new();
    // The workspace's start screen in the visitor's language, or the neutral greeting.
    let boot = use_context::<WidgetBoot>().unwrap_or_default();
    let greeting = boot.greeting.clone().unwrap_or_else(|| chat.t(Msg::Greeting));
    let prompts = StoredValue::new(boot.prompts.clone());
    // Keep the newest text in view while it streams.
    Effect::new(move |_| {
        let bubbles = chat.bubbles.get();
        if let Some(last) = bubbles.last() {
            last.text.track();
            last.state.track();
        }
        if let Some(el) = log.get() {
            el.set_scroll_top(el.scroll_height());
        }
    });
    let start = NodeRef::new();
    let first_start = region(start, move || {
        let shown = chat.bubbles.with(Vec::is_empty);
        let ready = chat.token.with(Option::is_some) && !chat.busy.get();
        prompts.with_value(|prompts| start_markup(&greeting, prompts, shown, ready, &|m| chat.t(m)))
    });
    let on_prompt = move |ev: leptos::ev::MouseEvent| {
        let prompt = region::action_of(&ev)
            .filter(|(_, action)| action == "prompt")
            .and_then(|(button, _)| button.get_attribute("data-index")?.parse::<usize>().ok())
            .and_then(|i| prompts.with_value(|p| p.get(i).cloned()));
        if let Some(prompt) = prompt {
            intents::send(chat, prompt);
        }
    };
    view! {
        <div class="ca-log" role="log" aria-live="off" aria-label=chat.t(Msg::Conversation) node_ref=log tabindex="0"
            hidden=move || chat.history.with(Option::is_some)>
            <div class="ca-part" node_ref=start inner_html=first_start on:click=on_prompt></div>
            <For each=move || chat.bubbles.get() key=|b| b.id let:bubble>
                <MessageBubble bubble/>
            </For>
            <ActionCard/>
        </div>
    }
}

/// The empty chat: the workspace's greeting and its suggested prompts,
/// which send with one click once the chat is `ready`.
fn start_markup(greeting: &str, prompts: &[String], shown: bool, ready: bool, t: &dyn Fn(Msg) -> String) -> String {
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

#[component]
fn MessageBubble(bubble: Bubble) -> impl IntoView {
    let chat = expect_context::<Chat>();
    let t = move |m| chat.t(m);
    let class = match bubble.role {
        Role::User => "ca-msg ca-user",
        Role::Assistant | Role::Tool => "ca-msg ca-assistant",
    };
    let (text, cards, parts, tools) = (NodeRef::new(), NodeRef::new(), NodeRef::new(), NodeRef::new());
    let state = bubble.state;
    let first_text = region(text, move || {
        state.with(|s| bubble.text.with(|text| text_markup(bubble.role, text, s.html.as_deref(), &t)))
    });
    // Apart from the text, so a streamed token does not redraw the cards' images.
    let first_cards = region(cards, move || state.with(|s| cards_markup(&s.cards, &t)));
    let first_parts = region(parts, move || state.with(|s| components_markup(chat, &s.components)));
    let first_tools = region(tools, move || {
        let last = chat.bubbles.with(|b| b.last().is_some_and(|l| l.id == bubble.id));
        let busy = chat.busy.get();
        state.with(|s| {
            let tools = Tools {
                interrupted: s.interrupted,
                finished: bubble.role == Role::Assistant && s.html.is_some(),
                copied: s.copied,
                rating: s.rating,
                rateable: s.message_id.is_some(),
                last,
                busy,
                commenting: s.commenting,
            };
            tools_markup(&tools, &t)
        })
    });
    // The reply's own controls, and those of its components.
    let on_click = move |ev: leptos::ev::MouseEvent| {
        let Some((control, action)) = region::action_of(&ev) else { return };
        if let Some(component) = component_of(bubble, &control) {
            return menu_cart::click(chat, &component, &control, &action);
        }
        match action.as_str() {
            "copy" => intents::copy_reply(chat, bubble),
            "rate-up" => intents::rate(chat, bubble, Rating::Up),
            "rate-down" => intents::rate(chat, bubble, Rating::Down),
            "again" => intents::ask_again(chat),
            _ => {}
        }
    };
    let on_change = move |ev: leptos::ev::Event| {
        use leptos::wasm_bindgen::JsCast;
        let Some(input) = ev.target().and_then(|t| t.dyn_into::<leptos::web_sys::HtmlInputElement>().ok()) else {
            return;
        };
        if let Some(component) = component_of(bubble, &input) {
            menu_cart::change(chat, &component, &input);
        }
    };
    let on_submit = move |ev: leptos::ev::SubmitEvent| {
        use leptos::wasm_bindgen::JsCast;
        let Some(form) = ev.target().and_then(|t| t.dyn_into::<leptos::web_sys::Element>().ok()) else { return };
        if !form.class_list().contains("ca-feedback") {
            return;
        }
        ev.prevent_default();
        let comment = form
            .query_selector(".ca-feedback-comment")
            .ok()
            .flatten()
            .and_then(|i| i.dyn_into::<leptos::web_sys::HtmlInputElement>().ok())
            .map(|i| i.value())
            .unwrap_or_default();
        intents::comment(chat, bubble, comment);
    };
    view! {
        <div class=class data-interrupted=move || state.with(|s| s.interrupted).then_some("true")
            data-stopped=move || state.with(|s| s.stopped).then_some("true") on:click=on_click on:change=on_change on:submit=on_submit>
            <div class="ca-part" node_ref=text inner_html=first_text></div>
            <div class="ca-part" node_ref=cards inner_html=first_cards></div>
            <div class="ca-part" node_ref=parts inner_html=first_parts></div>
            <div class="ca-part" node_ref=tools inner_html=first_tools></div>
        </div>
    }
}

/// Who said it, then the text while it streams or, once finished, the
/// server's sanitized HTML.
fn text_markup(role: Role, text: &str, html: Option<&str>, t: &dyn Fn(Msg) -> String) -> String {
    let who = escape(&t(if role == Role::User { Msg::You } else { Msg::Assistant }));
    match html {
        Some(html) => format!("<span class=\"ca-sr-only\">{who}: </span><div class=\"ca-md\">{html}</div>"),
        None => format!("<span class=\"ca-sr-only\">{who}: </span><p class=\"ca-text\">{}</p>", escape(text)),
    }
}

/// Sanitized link cards; every field is text (the server has checked the
/// addresses).
fn cards_markup(cards: &[DisplayCard], t: &dyn Fn(Msg) -> String) -> String {
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

/// What the controls under a message show.
struct Tools {
    /// The stream broke before the message was finished.
    interrupted: bool,
    /// A finished reply of the assistant: it gets the controls.
    finished: bool,
    copied: bool,
    rating: Option<Rating>,
    /// The server has named the reply (feedback needs its id).
    rateable: bool,
    /// The last message: it may be asked for again.
    last: bool,
    busy: bool,
    commenting: bool,
}

/// A thumb up (Material Symbols' "thumb_up", Apache-2.0); turned over for down.
const THUMB: &str = "M1 21h4V9H1v12zm22-11c0-1.1-.9-2-2-2h-6.31l.95-4.57.03-.32c0-.41-.17-.79-.44-1.06L14.17 1 \
                     7.59 7.59C7.22 7.95 7 8.45 7 9v10c0 1.1.9 2 2 2h9c.83 0 1.54-.5 1.84-1.22l3.02-7.05c.09-.23.14-.47.14-.73v-2z";

/// The cut-off note, and on a finished reply: Copy, the thumbs (pressed
/// while they are the user's rating), Ask again on the last one, and the
/// comment field after a thumb.
fn tools_markup(tools: &Tools, t: &dyn Fn(Msg) -> String) -> String {
    use std::fmt::Write;
    let word = |m: Msg| escape(&t(m));
    let mut html = String::new();
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

/// The reply's rich components, each drawn by its kind (a kind this
/// widget does not know shows nothing), in a `data-component` wrapper that
/// names it by its index; focus keys are the component's own.
fn components_markup(chat: Chat, components: &[Component]) -> String {
    use std::fmt::Write;
    let mut html = String::new();
    for (i, component) in components.iter().enumerate() {
        let drawn = match component.kind.as_str() {
            "menu_cart" => menu_cart::draw(chat, component),
            _ => continue,
        };
        // Host text is escaped (`"` included), so only our own attributes match.
        let drawn = drawn.replace("data-focus=\"", &format!("data-focus=\"c{i}-"));
        let _ = write!(html, "<div class=\"ca-part\" data-component=\"{i}\">{drawn}</div>");
    }
    html
}

/// The component a control inside the reply belongs to, if any.
fn component_of(bubble: Bubble, control: &leptos::web_sys::Element) -> Option<Component> {
    let index: usize = control.closest("[data-component]").ok()??.get_attribute("data-component")?.parse().ok()?;
    bubble.state.with_untracked(|s| s.components.get(index).cloned())
}

#[cfg(test)]
mod tests {
    use super::super::region::english;
    use super::{Tools, cards_markup, start_markup, text_markup, tools_markup};
    use crate::wire::{DisplayCard, Rating, Role};

    const HOSTILE: &str = r#"<img src=x onerror=alert(1)>"' & </p>"#;
    const ESCAPED: &str = "&lt;img src=x onerror=alert(1)&gt;&quot;&#39; &amp; &lt;/p&gt;";

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
        }
    }

    #[test]
    fn streamed_text_is_escaped_and_finished_html_is_the_servers() {
        let html = text_markup(Role::User, HOSTILE, None, &english);
        assert_eq!(html, format!(r#"<span class="ca-sr-only">You: </span><p class="ca-text">{ESCAPED}</p>"#));
        let html = text_markup(Role::Assistant, HOSTILE, Some("<p>sanitized</p>"), &english);
        assert_eq!(html, r#"<span class="ca-sr-only">Assistant: </span><div class="ca-md"><p>sanitized</p></div>"#);
    }

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
