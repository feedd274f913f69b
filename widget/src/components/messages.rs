//! The conversation: the start screen (start.rs), then each message with
//! its text (or sanitized HTML), its link cards (cards.rs), its rich
//! components and its tools (reply_tools.rs), and the action card at the end.

use leptos::prelude::*;

use super::action_card::ActionCard;
use super::cards::cards_markup;
use super::elicitation::ElicitationForm;
use super::menu_cart;
use super::region::{self, region};
use super::reply_tools::{Tools, tools_markup};
use super::start::start_markup;
use crate::html::escape;
use crate::intents;
use crate::state::{Bubble, Chat, Component};
use crate::wire::i18n::Msg;
use crate::wire::{Rating, Role, WidgetBoot};

/// The conversation, as a log: assistive technology hears the
/// announcements, not every streamed token. Each message is one element
/// of markup ([`bubble_markup`]) redrawn in place (`js/dom.js`) when it
/// changes, with one listener for all their controls: a keyed list of
/// reactive views per message cost the widget's WASM 6 KB brotli
/// (docs/benchmarks.md). A streamed token redraws only its own message
/// (the whole list's markup would cost the browser 11 ms a token in a
/// conversation of 200 messages, `scripts/bench-redraw.js`), and no
/// message's element is replaced or moved, so an app's frame never reloads.
#[component]
pub fn MessageList() -> impl IntoView {
    let chat = expect_context::<Chat>();
    let log = NodeRef::<leptos::html::Div>::new();
    // The workspace's start screen in the visitor's language, or the neutral greeting.
    let boot = use_context::<WidgetBoot>().unwrap_or_default();
    let greeting = boot.greeting.clone().unwrap_or_else(|| chat.t(Msg::Greeting));
    let prompts = StoredValue::new(boot.prompts.clone());
    let list = NodeRef::new();
    // The server draws the messages there are (none: the browser restores
    // them); the browser draws each from then on.
    #[cfg(not(feature = "hydrate"))]
    let first_list = chat.bubbles.with_untracked(|bubbles| {
        let (last, busy) = (bubbles.last().map(|b| b.id), chat.busy.get_untracked());
        bubbles.iter().map(|&b| bubble_markup(chat, b, Some(b.id) == last, busy, &|m| chat.t(m))).collect::<String>()
    });
    #[cfg(feature = "hydrate")]
    let first_list = draw_list(chat, list);
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
    // The start's prompts, and each message's own controls and those of its
    // components, by one listener (the action card and the question inside
    // the log answer their own, by other names).
    let on_click = move |ev: leptos::ev::MouseEvent| {
        let Some((control, action)) = region::action_of(&ev) else { return };
        let Some(bubble) = bubble_of(chat, &control) else {
            let prompt = (action == "prompt")
                .then(|| control.get_attribute("data-index")?.parse::<usize>().ok())
                .flatten()
                .and_then(|i| prompts.with_value(|p| p.get(i).cloned()));
            if let Some(prompt) = prompt {
                intents::send(chat, prompt, String::new());
            }
            return;
        };
        if let Some(component) = component_of(bubble, &control) {
            return menu_cart::click(chat, &component, &control, &action);
        }
        match action.as_str() {
            "copy" => intents::copy_reply(chat, bubble),
            "rate-up" => intents::rate(chat, bubble, Rating::Up),
            "rate-down" => intents::rate(chat, bubble, Rating::Down),
            "again" => intents::ask_again(chat),
            "resend" => intents::resend(chat, bubble),
            _ => {}
        }
    };
    let on_change = move |ev: leptos::ev::Event| {
        use leptos::wasm_bindgen::JsCast;
        let Some(input) = ev.target().and_then(|t| t.dyn_into::<leptos::web_sys::HtmlInputElement>().ok()) else {
            return;
        };
        if let Some(bubble) = bubble_of(chat, &input)
            && let Some(component) = component_of(bubble, &input)
        {
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
        let Some(bubble) = bubble_of(chat, &form) else { return };
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
        <div class="ca-log" role="log" aria-live="off" aria-label=chat.t(Msg::Conversation) node_ref=log tabindex="0"
            hidden=move || chat.history.with(Option::is_some) on:click=on_click>
            <div class="ca-part" node_ref=start inner_html=first_start></div>
            <div class="ca-part" node_ref=list inner_html=first_list on:change=on_change on:submit=on_submit></div>
            <ElicitationForm/>
            <ActionCard/>
        </div>
    }
}

/// Keeps the list's elements in step with the messages: one element per
/// message (`data-bubble` its id), in their order, each with an owner of its own
/// whose effect redraws it ([`region::element`]). A message gone (a new
/// conversation, one taken back) takes its element and effect with it; a
/// new one goes after the message before it. An element never moves: a
/// moved app frame would reload.
#[cfg(feature = "hydrate")]
fn draw_list(chat: Chat, list: NodeRef<leptos::html::Div>) -> &'static str {
    use leptos::wasm_bindgen::JsCast;
    use leptos::web_sys::{HtmlElement, Node};
    let Some(parent) = Owner::current() else { return "" };
    Effect::new(move |drawn: Option<Vec<(u64, Owner, HtmlElement)>>| {
        let mut drawn = drawn.unwrap_or_default();
        let Some(root) = list.get() else { return drawn };
        chat.bubbles.with(|bubbles| {
            drawn.retain(|(id, owner, element)| {
                let kept = bubbles.iter().any(|b| b.id == *id);
                if !kept {
                    owner.cleanup();
                    element.remove();
                }
                kept
            });
            let mut next: Option<Node> = root.first_child();
            for &bubble in bubbles {
                if let Some((_, _, element)) = drawn.iter().find(|(id, ..)| *id == bubble.id) {
                    next = element.next_sibling();
                    continue;
                }
                let Ok(element) = document().create_element("div") else { continue };
                let element: HtmlElement = element.unchecked_into();
                let _ = root.insert_before(&element, next.as_ref());
                let owner = parent.child();
                let drawing = element.clone();
                owner.with(|| {
                    region::element(drawing, move || {
                        let last = chat.bubbles.with(|b| b.last().is_some_and(|l| l.id == bubble.id));
                        bubble_markup(chat, bubble, last, chat.busy.get(), &|m| chat.t(m))
                    })
                });
                drawn.push((bubble.id, owner, element));
            }
        });
        drawn
    });
    ""
}

/// A message in its element (`data-bubble` its id): its text, its link cards,
/// its components and its tools. Focus keys are the message's own
/// (`m{id}-…`), so focus kept across a redraw stays in the same message.
fn bubble_markup(chat: Chat, bubble: Bubble, last: bool, busy: bool, t: &dyn Fn(Msg) -> String) -> String {
    let id = bubble.id;
    bubble.state.with(|s| {
        let class = match bubble.role {
            Role::User => "ca-msg ca-user",
            Role::Assistant | Role::Tool => "ca-msg ca-assistant",
        };
        let flag = |on: bool, name: &str| if on { format!(" data-{name}=\"true\"") } else { String::new() };
        let tools = Tools {
            interrupted: s.interrupted,
            finished: bubble.role == Role::Assistant && s.html.is_some(),
            copied: s.copied,
            rating: s.rating,
            rateable: s.message_id.is_some(),
            last,
            busy,
            commenting: s.commenting,
            delivery: s.delivery,
        };
        format!(
            "<div class=\"{class}\" data-bubble=\"{id}\"{}{}>\
             <div class=\"ca-part\">{}</div><div class=\"ca-part\">{}</div>\
             <div class=\"ca-part\">{}</div><div class=\"ca-part\">{}</div></div>",
            flag(s.interrupted, "interrupted"),
            flag(s.stopped, "stopped"),
            bubble.text.with(|text| text_markup(bubble.role, text, s.html.as_deref(), t)),
            cards_markup(&s.cards, t),
            components_markup(chat, id, &s.components),
            // Our own words only: no host text to be mistaken for a key.
            tools_markup(&tools, t).replace("data-focus=\"", &format!("data-focus=\"m{id}-")),
        )
    })
}

/// The message a control is in.
fn bubble_of(chat: Chat, control: &leptos::web_sys::Element) -> Option<Bubble> {
    let id: u64 = control.closest("[data-bubble]").ok()??.get_attribute("data-bubble")?.parse().ok()?;
    chat.bubbles.with_untracked(|b| b.iter().find(|b| b.id == id).copied())
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

/// The reply's rich components, each drawn by its kind (a kind this
/// widget does not know shows nothing), in a `data-component` wrapper that
/// names it by its index; focus keys are the component's own.
fn components_markup(chat: Chat, bubble: u64, components: &[Component]) -> String {
    use std::fmt::Write;
    let mut html = String::new();
    for (i, component) in components.iter().enumerate() {
        let drawn = match component.kind.as_str() {
            "menu_cart" => menu_cart::draw(chat, component),
            "mcp-app" => component.data.with(|data| app_frame(data)),
            _ => continue,
        };
        // Host text is escaped (`"` included), so only our own attributes match.
        let drawn = drawn.replace("data-focus=\"", &format!("data-focus=\"m{bubble}c{i}-"));
        let _ = write!(html, "<div class=\"ca-part\" data-component=\"{i}\">{drawn}</div>");
    }
    html
}

/// An MCP App: a frame of the assistant's own bridge page, whose address
/// (with the app's token after `#`) the server gave; the app runs inside
/// it on the sandbox origin. The bridge's code loads only here.
fn app_frame(data: &str) -> String {
    #[cfg(feature = "hydrate")]
    let (title, src) = {
        let data = crate::js::parse(data);
        (crate::js::string(&data, "title"), crate::js::string(&data, "src"))
    };
    #[cfg(not(feature = "hydrate"))]
    let (title, src) = {
        let data: serde_json::Value = serde_json::from_str(data).unwrap_or_default();
        let text = |key: &str| data.get(key).and_then(|v| v.as_str()).map(str::to_owned);
        (text("title"), text("src"))
    };
    match src.filter(|src| src.starts_with("/widget/app/")) {
        Some(src) => format!(
            // No `allow`: the bridge is of this origin, so it has what the
            // page lent the widget, and lends the app only what the server
            // granted it (docs/mcp.md, "Browser features").
            "<iframe class=\"ca-app\" src=\"{}\" title=\"{}\"></iframe>",
            escape(&src),
            escape(&title.unwrap_or_default())
        ),
        None => String::new(),
    }
}

/// The component a control inside the reply belongs to, if any.
fn component_of(bubble: Bubble, control: &leptos::web_sys::Element) -> Option<Component> {
    let index: usize = control.closest("[data-component]").ok()??.get_attribute("data-component")?.parse().ok()?;
    bubble.state.with_untracked(|s| s.components.get(index).cloned())
}

#[cfg(test)]
mod tests {
    use super::super::region::{ESCAPED, HOSTILE, english};
    use super::{bubble_markup, text_markup};
    use crate::state::{Bubble, BubbleState, Chat};
    use crate::wire::Role;
    use leptos::prelude::*;

    #[test]
    fn a_message_is_one_element_whose_focus_keys_are_its_own() {
        // Signals live in an owner's arena (the server's build sandboxes them).
        Owner::new().with(one_element_with_its_own_focus_keys);
    }

    fn one_element_with_its_own_focus_keys() {
        let chat = Chat::new(Vec::new());
        let state = BubbleState {
            html: Some("<p>sanitized</p>".into()),
            message_id: Some("msg_1".into()),
            stopped: true,
            ..BubbleState::default()
        };
        let reply =
            Bubble { id: 7, role: Role::Assistant, text: RwSignal::new(HOSTILE.into()), state: RwSignal::new(state) };
        let html = bubble_markup(chat, reply, true, false, &english);
        assert!(
            html.starts_with(
                r#"<div class="ca-msg ca-assistant" data-bubble="7" data-stopped="true"><div class="ca-part">"#
            ),
            "{html}"
        );
        assert_eq!(html.matches("<div class=\"ca-part\">").count(), 4, "text, cards, components, tools: {html}");
        assert!(html.contains(r#"data-focus="m7-copy""#) && html.contains(r#"data-focus="m7-again""#), "{html}");
        assert!(!html.contains(r#"data-focus="copy""#), "{html}");
        // Not the last: no Ask again. Still streaming: its text, escaped; no tools.
        reply.state.update(|s| s.html = None);
        let html = bubble_markup(chat, reply, false, false, &english);
        assert!(html.contains(ESCAPED) && !html.contains(HOSTILE), "{html}");
        assert!(!html.contains("data-action"), "{html}");
    }

    #[test]
    fn an_app_is_framed_only_at_the_bridge_with_its_title_escaped() {
        let html = super::app_frame(r#"{"title":"<b>Clock</b>","src":"/widget/app/cmp_1#tok.en"}"#);
        assert_eq!(
            html,
            r#"<iframe class="ca-app" src="/widget/app/cmp_1#tok.en" title="&lt;b&gt;Clock&lt;/b&gt;"></iframe>"#
        );
        assert_eq!(super::app_frame(r#"{"title":"x","src":"https://elsewhere.example/widget/app/1"}"#), "");
        assert_eq!(super::app_frame(r#"{"title":"x","src":"javascript:alert(1)"}"#), "");
        assert_eq!(super::app_frame("not json"), "");
    }

    #[test]
    fn streamed_text_is_escaped_and_finished_html_is_the_servers() {
        let html = text_markup(Role::User, HOSTILE, None, &english);
        assert_eq!(html, format!(r#"<span class="ca-sr-only">You: </span><p class="ca-text">{ESCAPED}</p>"#));
        let html = text_markup(Role::Assistant, HOSTILE, Some("<p>sanitized</p>"), &english);
        assert_eq!(html, r#"<span class="ca-sr-only">Assistant: </span><div class="ca-md"><p>sanitized</p></div>"#);
    }
}
