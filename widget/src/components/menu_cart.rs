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
use crate::state::{Arg, Chat, Component};
use crate::wire::MenuCartData;
use crate::wire::i18n::{Msg, fill};

/// The MenuCart of `component` with its own error, if any: drawn with the
/// reply's other components (`messages`), which hand its clicks and
/// changes to [`click`] and [`change`].
pub fn draw(chat: Chat, component: &Component) -> String {
    let t = move |m| chat.t(m);
    let Some(menu) = component.data.with(|text| parse_menu(text)) else { return String::new() };
    let inner = markup(&menu, chat.busy.get(), &t, &price);
    let mut html = format!(
        "<section class=\"ca-menu-cart\" aria-label=\"{}\" aria-busy=\"{}\">{inner}</section>",
        escape(&t(Msg::MenuCart)),
        component.busy.get()
    );
    if let Some(e) = component.error.get() {
        html.push_str(&format!("<p class=\"ca-mc-error\" role=\"alert\">{}</p>", escape(&e)));
    }
    html
}

/// The dish a control stands for, by its index in the current menu.
fn dish(component: &Component, index: Option<String>) -> Option<String> {
    let index: usize = index?.parse().ok()?;
    component.data.with_untracked(|text| parse_menu(text)?.items.into_iter().nth(index)).map(|i| i.id)
}

fn call(chat: Chat, component: &Component, tool: &'static str, arguments: Vec<(&'static str, Arg)>) {
    intents::call_component(chat, component.id.clone(), tool, arguments, component.busy, component.error);
}

/// `+`, `−` and Checkout.
pub fn click(chat: Chat, component: &Component, control: &leptos::web_sys::Element, action: &str) {
    match (action, dish(component, control.get_attribute("data-index"))) {
        ("add", Some(item)) => {
            call(chat, component, "add_to_cart", vec![("item", Arg::Text(item)), ("quantity", Arg::Number(1))])
        }
        ("remove", Some(item)) => call(chat, component, "remove_from_cart", vec![("item", Arg::Text(item))]),
        ("checkout", _) => intents::send(chat, chat.t(Msg::CheckoutMessage), String::new()),
        _ => {}
    }
}

/// A line's note, saved when the user leaves the field changed.
pub fn change(chat: Chat, component: &Component, input: &leptos::web_sys::HtmlInputElement) {
    let Some(item) = dish(component, input.get_attribute("data-index")) else { return };
    let text = input.value().trim().to_owned();
    let unchanged = component.data.with_untracked(|d| parse_menu(d).is_some_and(|m| m.notes(&item) == text));
    if !unchanged {
        call(chat, component, "set_notes", vec![("item", Arg::Text(item)), ("notes", Arg::Text(text))]);
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
    use super::super::region::english;
    use super::{MenuCartData, Msg, escape, markup};

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
