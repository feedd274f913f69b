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
            intents::send(chat, prompt, String::new());
        }
    };
    view! {
        <div class="ca-log" role="log" aria-live="off" aria-label=chat.t(Msg::Conversation) node_ref=log tabindex="0"
            hidden=move || chat.history.with(Option::is_some)>
            <div class="ca-part" node_ref=start inner_html=first_start on:click=on_prompt></div>
            <For each=move || chat.bubbles.get() key=|b| b.id let:bubble>
                <MessageBubble bubble/>
            </For>
            <ElicitationForm/>
            <ActionCard/>
        </div>
    }
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
                delivery: s.delivery,
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
            "resend" => intents::resend(chat, bubble),
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

/// The reply's rich components, each drawn by its kind (a kind this
/// widget does not know shows nothing), in a `data-component` wrapper that
/// names it by its index; focus keys are the component's own.
fn components_markup(chat: Chat, components: &[Component]) -> String {
    use std::fmt::Write;
    let mut html = String::new();
    for (i, component) in components.iter().enumerate() {
        let drawn = match component.kind.as_str() {
            "menu_cart" => menu_cart::draw(chat, component),
            "mcp-app" => component.data.with(|data| app_frame(data)),
            _ => continue,
        };
        // Host text is escaped (`"` included), so only our own attributes match.
        let drawn = drawn.replace("data-focus=\"", &format!("data-focus=\"c{i}-"));
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
    use super::text_markup;
    use crate::wire::Role;

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
