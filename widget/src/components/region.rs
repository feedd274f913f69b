//! Parts of the screen drawn as one escaped HTML string with delegated
//! listeners, rather than as many small reactive views: the same markup
//! costs a fraction of the WASM (the widget's size is a budget,
//! docs/benchmarks.md). The markup functions are plain Rust, tested
//! natively; every value from the host, the model or the catalogue goes
//! through [`crate::html::escape`].
//!
//! The server draws a part's first markup into the page; the browser
//! redraws it when its state changes. A redraw keeps what the user was
//! doing: focus goes back to the control with the same `data-focus` key,
//! the focused field keeps its text and caret, and a field marked
//! `data-keep` keeps what was typed into it.

use leptos::prelude::*;
use leptos::wasm_bindgen::JsCast;

/// Draws the markup `html` makes into `node`'s element whenever it
/// changes, and returns its first markup for the element's `inner_html`:
/// the server's page carries it, and the browser does not draw that again
/// on hydrating.
pub fn region(node: NodeRef<leptos::html::Div>, html: impl Fn() -> String + Send + Sync + 'static) -> String {
    drawn(node, Box::new(html))
}

/// [`region`] for any markup: one memo and one effect in the WASM, not one
/// per part.
fn drawn(node: NodeRef<leptos::html::Div>, html: Box<dyn Fn() -> String + Send + Sync>) -> String {
    let html = Memo::new(move |_| html());
    let first = html.get_untracked();
    #[cfg(not(feature = "hydrate"))]
    let _ = node;
    #[cfg(feature = "hydrate")]
    {
        let drawn = first.clone();
        Effect::new(move |last: Option<String>| {
            let html = html.get();
            let last = last.unwrap_or_else(|| drawn.clone());
            if html == last {
                return last;
            }
            match node.get() {
                Some(element) => {
                    redraw(&element, &html);
                    html
                }
                // Not in the page yet: drawn once it is (`node` is tracked).
                None => last,
            }
        });
    }
    first
}

/// The control an event came from: the nearest element around its target
/// with `data-action`, and that action.
pub fn action_of(ev: &leptos::web_sys::Event) -> Option<(leptos::web_sys::Element, String)> {
    let control = ev
        .target()
        .and_then(|t| t.dyn_into::<leptos::web_sys::Element>().ok())?
        .closest("[data-action]")
        .ok()
        .flatten()?;
    let action = control.get_attribute("data-action")?;
    Some((control, action))
}

/// Replaces `root`'s markup, keeping focus, the focused field's text and
/// caret, and the text of every `data-keep` field. When the focused `−`
/// became disabled, focus goes to its row's `+` (`…remove-N` → `…add-N`).
#[cfg(feature = "hydrate")]
pub fn redraw(root: &leptos::web_sys::HtmlElement, html: &str) {
    use leptos::web_sys::{HtmlElement, HtmlInputElement};
    let focused = document().active_element().filter(|a| root.contains(Some(a)));
    let key = focused.as_ref().and_then(|a| a.get_attribute("data-focus"));
    let typing = focused
        .and_then(|a| a.dyn_into::<HtmlInputElement>().ok())
        .map(|input| (input.value(), input.selection_start().ok().flatten(), input.selection_end().ok().flatten()));
    let mut kept = Vec::new();
    if let Ok(fields) = root.query_selector_all("input[data-keep]") {
        for input in (0..fields.length()).filter_map(|i| fields.item(i)?.dyn_into::<HtmlInputElement>().ok()) {
            if let Some(keep) = input.get_attribute("data-keep") {
                kept.push((keep, input.value()));
            }
        }
    }
    root.set_inner_html(html);
    for (keep, value) in kept {
        if let Some(input) = root
            .query_selector(&format!("input[data-keep=\"{keep}\"]"))
            .ok()
            .flatten()
            .and_then(|e| e.dyn_into::<HtmlInputElement>().ok())
        {
            input.set_value(&value);
        }
    }
    let Some(key) = key else { return };
    if focus_by_key(root, key, typing) {
        return;
    }
    // The control is gone or waits: the part's own home holds focus.
    if let Some(home) =
        root.query_selector("[data-focus-home]").ok().flatten().and_then(|e| e.dyn_into::<HtmlElement>().ok())
    {
        let _ = home.focus();
    }
}

/// Focuses the control with `data-focus` `key` (for a disabled `remove-N`,
/// `add-N`), giving a field back the text and caret it had; false when
/// there is none to focus.
#[cfg(feature = "hydrate")]
fn focus_by_key(
    root: &leptos::web_sys::HtmlElement,
    key: String,
    typing: Option<(String, Option<u32>, Option<u32>)>,
) -> bool {
    use leptos::web_sys::{HtmlElement, HtmlInputElement};
    let field = |key: &str| {
        root.query_selector(&format!("[data-focus=\"{key}\"]"))
            .ok()
            .flatten()
            .and_then(|e| e.dyn_into::<HtmlElement>().ok())
    };
    let fallback = key.contains("remove-").then(|| key.replace("remove-", "add-"));
    for key in std::iter::once(key).chain(fallback) {
        let Some(el) = field(&key).filter(|el| !el.has_attribute("disabled")) else { continue };
        let _ = el.focus();
        if let (Some((value, start, end)), Ok(input)) = (&typing, el.dyn_into::<HtmlInputElement>()) {
            input.set_value(value);
            let _ = input.set_selection_range(start.unwrap_or(0), end.unwrap_or(0));
        }
        return true;
    }
    false
}

/// Host text that would run or break out if it were not escaped, and the
/// same text escaped (for the markup's tests).
#[cfg(test)]
pub const HOSTILE: &str = r#"<img src=x onerror=alert(1)>"' & </p>"#;
#[cfg(test)]
pub const ESCAPED: &str = "&lt;img src=x onerror=alert(1)&gt;&quot;&#39; &amp; &lt;/p&gt;";

/// The English catalogue's words, as the server hands them over (for the
/// markup's tests).
#[cfg(test)]
pub fn english(m: crate::wire::i18n::Msg) -> String {
    let catalogue: std::collections::HashMap<String, String> =
        serde_json::from_str(include_str!("../../i18n/en.json")).unwrap();
    catalogue[m.key()].clone()
}
