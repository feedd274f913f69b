//! The user's earlier conversations, in place of the chat while open:
//! each with its title and when it was last active; one click goes back.
//! The list is the client's escaped markup; the panel is drawn as markup
//! too, with one delegated listener (`region`).

use leptos::prelude::*;

use super::region::{self, region};
use crate::html::escape;
use crate::intents;
use crate::state::Chat;
use crate::wire::i18n::Msg;

#[component]
pub fn HistoryPanel() -> impl IntoView {
    let chat = expect_context::<Chat>();
    let panel = NodeRef::new();
    let first = region(panel, move || {
        chat.history.with(|items| items.as_deref().map(|items| markup(items, &|m| chat.t(m)))).unwrap_or_default()
    });
    // Opened: focus on its heading, so the list is read from the top.
    Effect::new(move |was_open: Option<bool>| {
        let open = chat.history.with(Option::is_some);
        if open && was_open != Some(true) {
            focus_heading();
        }
        open
    });
    let on_click = move |ev: leptos::ev::MouseEvent| match region::action_of(&ev) {
        Some((item, action)) if action == "open" => {
            if let Some(id) = item.get_attribute("data-id") {
                intents::open_conversation(chat, id);
            }
        }
        Some((_, action)) if action == "back" => intents::hide_history(chat),
        _ => {}
    };
    view! { <div class="ca-part" node_ref=panel inner_html=first on:click=on_click></div> }
}

/// The panel around `items`, the list's escaped markup (`<li>`s whose
/// buttons carry `data-action="open"` and the conversation's `data-id`).
fn markup(items: &str, t: &dyn Fn(Msg) -> String) -> String {
    format!(
        "<section class=\"ca-history\" aria-labelledby=\"ca-history-title\">\
         <h2 id=\"ca-history-title\" class=\"ca-history-title\" tabindex=\"-1\">{}</h2>\
         <p class=\"ca-empty\"{}>{}</p><ul class=\"ca-history-list\">{items}</ul>\
         <button type=\"button\" class=\"ca-button ca-secondary\" data-action=\"back\">{}</button></section>",
        escape(&t(Msg::History)),
        if items.is_empty() { "" } else { " hidden" },
        escape(&t(Msg::HistoryEmpty)),
        escape(&t(Msg::HistoryBack)),
    )
}

/// Moves focus to the panel's heading once it is drawn.
fn focus_heading() {
    #[cfg(feature = "hydrate")]
    request_animation_frame(|| {
        use leptos::wasm_bindgen::JsCast;
        if let Some(heading) = document()
            .get_element_by_id("ca-history-title")
            .and_then(|h| h.dyn_into::<leptos::web_sys::HtmlElement>().ok())
        {
            let _ = heading.focus();
        }
    });
}

#[cfg(test)]
mod tests {
    use super::super::region::english;
    use super::markup;

    #[test]
    fn the_panel_says_when_there_is_nothing_to_go_back_to() {
        let empty = markup("", &english);
        assert!(empty.contains(r#"<p class="ca-empty">"#) && empty.contains(r#"data-action="back""#), "{empty}");
        let listed = markup("<li>x</li>", &english);
        assert!(
            listed.contains(r#"<p class="ca-empty" hidden>"#)
                && listed.contains("<ul class=\"ca-history-list\"><li>x</li></ul>")
        );
    }
}
