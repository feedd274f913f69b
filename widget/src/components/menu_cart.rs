//! The bistro's menu and cart: dishes grouped by kind, `+`/`−` and a note
//! per line (the user's own clicks, sent straight to the cart tools), a
//! running total for display only, and Checkout — which goes through the
//! assistant, so the user sees the preview and applies it.
//!
//! Drawn as one escaped HTML string with two delegated listeners rather
//! than as dozens of small reactive views: the same markup costs a fraction
//! of the WASM (the widget's size is a budget). Every value from the host is
//! escaped ([`markup`]), and focus survives each redraw.

use leptos::prelude::*;

use crate::html::escape;
use crate::intents;
use crate::state::{Arg, Chat};
use crate::wire::MenuCartData;
use crate::wire::i18n::{Msg, fill};

#[component]
pub fn MenuCart(id: String, data: RwSignal<String>) -> impl IntoView {
    let chat = expect_context::<Chat>();
    let menu = Memo::new(move |_| data.with(|text| parse_menu(text)));
    let busy = RwSignal::new(false);
    let error = RwSignal::new(None::<String>);
    let id = StoredValue::new(id);
    let root = NodeRef::<leptos::html::Section>::new();
    let t = move |m| chat.t(m);
    let html = Memo::new(move |_| {
        let busy = chat.busy.get();
        menu.with(|m| m.as_ref().map(|m| markup(m, busy, &t, &price)).unwrap_or_default())
    });
    #[cfg(not(feature = "hydrate"))]
    let _ = html;
    #[cfg(feature = "hydrate")]
    Effect::new(move |_| {
        let html = html.get();
        if let Some(section) = root.get() {
            redraw_keeping_focus(&section, &html);
        }
    });
    let call = move |tool: &'static str, arguments: Vec<(&'static str, Arg)>| {
        intents::call_component(chat, id.get_value(), tool, arguments, busy, error);
    };
    // The dish a control stands for, by its index in the current menu.
    let dish = move |index: Option<String>| {
        let index: usize = index?.parse().ok()?;
        menu.with_untracked(|m| m.as_ref().and_then(|m| m.items.get(index)).map(|i| i.id.clone()))
    };
    let on_click = move |ev: leptos::ev::MouseEvent| {
        use leptos::wasm_bindgen::JsCast;
        let Some(button) = ev
            .target()
            .and_then(|t| t.dyn_into::<leptos::web_sys::Element>().ok())
            .and_then(|t| t.closest("button[data-action]").ok().flatten())
        else {
            return;
        };
        let item = dish(button.get_attribute("data-index"));
        match (button.get_attribute("data-action").as_deref(), item) {
            (Some("add"), Some(item)) => {
                call("add_to_cart", vec![("item", Arg::Text(item)), ("quantity", Arg::Number(1))])
            }
            (Some("remove"), Some(item)) => call("remove_from_cart", vec![("item", Arg::Text(item))]),
            (Some("checkout"), _) => intents::send(chat, chat.t(Msg::CheckoutMessage)),
            _ => {}
        }
    };
    let on_change = move |ev: leptos::ev::Event| {
        use leptos::wasm_bindgen::JsCast;
        let Some(input) = ev.target().and_then(|t| t.dyn_into::<leptos::web_sys::HtmlInputElement>().ok()) else {
            return;
        };
        let Some(item) = dish(input.get_attribute("data-index")) else { return };
        let text = input.value().trim().to_owned();
        let unchanged = menu.with_untracked(|m| m.as_ref().is_some_and(|m| m.notes(&item) == text));
        if !unchanged {
            call("set_notes", vec![("item", Arg::Text(item)), ("notes", Arg::Text(text))]);
        }
    };
    view! {
        <section class="ca-menu-cart" aria-label=t(Msg::MenuCart) aria-busy=move || busy.get().to_string()
            node_ref=root on:click=on_click on:change=on_change></section>
        {move || error.get().map(|e| view! { <p class="ca-mc-error" role="alert">{e}</p> })}
    }
}

/// The MenuCart's data, from its JSON text. Components come from the
/// stream or the conversation view, so they are drawn in the browser only.
fn parse_menu(text: &str) -> Option<MenuCartData> {
    #[cfg(feature = "hydrate")]
    return crate::js::menu_cart(&crate::js::parse(text));
    #[cfg(not(feature = "hydrate"))]
    return serde_json::from_str(text).ok();
}

/// Replaces the section's markup and puts focus back on the same control
/// (or, when a `−` became disabled, on its row's `+`).
#[cfg(feature = "hydrate")]
fn redraw_keeping_focus(section: &leptos::web_sys::HtmlElement, html: &str) {
    use leptos::wasm_bindgen::JsCast;
    let focused =
        document().active_element().filter(|a| section.contains(Some(a))).and_then(|a| a.get_attribute("data-focus"));
    section.set_inner_html(html);
    let Some(key) = focused else { return };
    let fallback = key.strip_prefix("remove-").map(|i| format!("add-{i}"));
    for key in std::iter::once(key).chain(fallback) {
        let found = section.query_selector(&format!("[data-focus=\"{key}\"]")).ok().flatten();
        if let Some(el) = found.and_then(|e| e.dyn_into::<leptos::web_sys::HtmlElement>().ok())
            && !el.has_attribute("disabled")
        {
            let _ = el.focus();
            return;
        }
    }
}

/// A whole-dollar price (acme-bistro-api-contract.md: USD) as the
/// visitor's locale writes it, through the browser's `Intl`.
fn price(amount: u64) -> String {
    #[cfg(feature = "hydrate")]
    return crate::client::boot::money(amount);
    #[cfg(not(feature = "hydrate"))]
    return format!("${amount}");
}

/// The MenuCart's markup, in the words of `t` with prices written by
/// `price`. Every text from the host goes through [`escape`] (the
/// catalogue's too); controls name their dish by its index in `items`, and
/// carry a `data-focus` key so focus survives a redraw.
pub fn markup(
    menu: &MenuCartData,
    chat_busy: bool,
    t: &dyn Fn(Msg) -> String,
    price: &dyn Fn(u64) -> String,
) -> String {
    use std::fmt::Write;
    let mut html = String::new();
    let word = |m: Msg, name: &str| fill(&escape(&t(m)), "{name}", name);
    let (sold_out, note) = (escape(&t(Msg::SoldOut)), escape(&t(Msg::NotePlaceholder)));
    for (kind, items) in menu.groups() {
        let _ = write!(html, "<h3 class=\"ca-mc-kind\">{}</h3><ul class=\"ca-mc-items\">", escape(&kind));
        for item in items {
            let index = menu.items.iter().position(|i| i.id == item.id).unwrap_or_default();
            let (name, quantity) = (escape(&item.name), menu.quantity(&item.id));
            let unavailable = if item.available { "" } else { " ca-mc-unavailable" };
            let _ = write!(
                html,
                "<li class=\"ca-mc-item{unavailable}\"><div class=\"ca-mc-line\"><span class=\"ca-mc-name\">{name}</span>\
                 <span class=\"ca-mc-price\">{}</span>{}\
                 <span class=\"ca-mc-qty\" role=\"group\" aria-label=\"{}\">\
                 <button type=\"button\" class=\"ca-mc-step\" data-action=\"remove\" data-index=\"{index}\" \
                 data-focus=\"remove-{index}\" aria-label=\"{}\"{}>−</button>\
                 <span class=\"ca-mc-count\">{quantity}</span>\
                 <button type=\"button\" class=\"ca-mc-step\" data-action=\"add\" data-index=\"{index}\" \
                 data-focus=\"add-{index}\" aria-label=\"{}\"{}>+</button></span></div>",
                escape(&price(u64::from(item.price))),
                if item.available { String::new() } else { format!("<span class=\"ca-mc-soldout\">{sold_out}</span>") },
                word(Msg::QuantityOf, &name),
                word(Msg::RemoveOne, &name),
                if quantity == 0 { " disabled" } else { "" },
                word(Msg::AddOne, &name),
                if item.available { "" } else { " disabled" },
            );
            if quantity > 0 {
                let _ = write!(
                    html,
                    "<input type=\"text\" class=\"ca-mc-notes\" maxlength=\"200\" placeholder=\"{note}\" \
                     aria-label=\"{}\" value=\"{}\" data-index=\"{index}\" data-focus=\"notes-{index}\">",
                    word(Msg::NoteFor, &name),
                    escape(&menu.notes(&item.id))
                );
            }
            html.push_str("</li>");
        }
        html.push_str("</ul>");
    }
    let _ = write!(
        html,
        "<p class=\"ca-mc-total\"><span>{} </span><strong class=\"ca-mc-sum\">{}</strong>\
         <span class=\"ca-mc-hint\"> — {}</span></p>\
         <button type=\"button\" class=\"ca-button ca-mc-checkout\" data-action=\"checkout\" data-focus=\"checkout\"{}>{}</button>",
        escape(&t(Msg::Total)),
        escape(&price(menu.display_total())),
        escape(&t(Msg::TotalHint)),
        if menu.cart.lines.is_empty() || chat_busy { " disabled" } else { "" },
        escape(&t(Msg::Checkout)),
    );
    html
}

#[cfg(test)]
mod tests {
    use super::{MenuCartData, Msg, escape, markup};

    /// The English catalogue's words, as the server hands them over.
    fn english(m: Msg) -> String {
        let catalogue: std::collections::HashMap<String, String> =
            serde_json::from_str(include_str!("../../i18n/en.json")).unwrap();
        catalogue[m.key()].clone()
    }

    fn dollars(amount: u64) -> String {
        format!("${amount}")
    }

    #[test]
    fn the_menu_cart_escapes_everything_the_host_sends() {
        let hostile = r#"<img src=x onerror=alert(1)>"' & </span>"#;
        let menu: MenuCartData = serde_json::from_value(serde_json::json!({
            "items": [{"id": hostile, "name": hostile, "price": 3, "kind": hostile}],
            "cart": {"lines": [{"item": hostile, "quantity": 1, "notes": hostile}]},
        }))
        .unwrap();
        let html = markup(&menu, false, &english, &dollars);
        assert!(!html.contains("<img") && !html.contains("</span>\"' &"), "{html}");
        assert_eq!(html.matches(&escape(hostile)).count(), 7, "kind, name ×5 (text and labels), notes");
        assert!(html.contains(r#"value="&lt;img src=x onerror=alert(1)&gt;&quot;&#39; &amp; &lt;/span&gt;""#));
        assert!(html.contains(r#"data-index="0""#) && !html.contains("data-item"));
    }

    #[test]
    fn the_menu_cart_escapes_its_own_words_and_writes_prices_as_told() {
        let menu: MenuCartData = serde_json::from_value(serde_json::json!({
            "items": [{"id": "a", "name": "A&B", "price": 3, "kind": "K"}],
            "cart": {"lines": [{"item": "a", "quantity": 2}]},
        }))
        .unwrap();
        let hostile = |_: Msg| r#"<i>"{name}"#.to_owned();
        let html = markup(&menu, false, &hostile, &|n| format!("{n} US$"));
        assert!(!html.contains("<i>"), "{html}");
        assert!(html.contains(r#"aria-label="&lt;i&gt;&quot;A&amp;B""#), "the name filled in, escaped once: {html}");
        assert!(html.contains(r#"<strong class="ca-mc-sum">6 US$</strong>"#), "{html}");
    }

    #[test]
    fn the_menu_cart_disables_what_cannot_be_done() {
        let menu: MenuCartData = serde_json::from_value(serde_json::json!({
            "items": [{"id": "a", "name": "A", "price": 3, "kind": "K"},
                      {"id": "b", "name": "B", "price": 5, "kind": "K", "available": false}],
        }))
        .unwrap();
        let html = markup(&menu, false, &english, &dollars);
        assert!(html.contains(r#"data-focus="remove-0" aria-label="Remove one A" disabled"#), "− at zero");
        assert!(html.contains(r#"data-focus="add-0" aria-label="Add one A">"#), "+ while available");
        assert!(html.contains(r#"data-focus="add-1" aria-label="Add one B" disabled"#), "+ when sold out");
        assert!(html.contains(r#"data-focus="checkout" disabled"#), "nothing to check out");
        assert!(!html.contains("ca-mc-notes"), "a note only for a dish in the cart");
    }
}
