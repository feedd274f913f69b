//! Parts of the screen drawn as one escaped HTML string with delegated
//! listeners, rather than as many small reactive views: the same markup
//! costs a fraction of the WASM (the widget's size is a budget,
//! docs/benchmarks.md). The markup functions are plain Rust, tested
//! natively; every value from the host, the model or the catalogue goes
//! through [`crate::html::escape`].
//!
//! The server draws a part's first markup into the page; the browser
//! redraws it when its state changes. A redraw keeps what the user was
//! doing: it patches the part in place (`js/dom.js`), so the control
//! under the pointer, the focused field with its text, caret and input
//! method's composition, and a field marked `data-keep` stay as they are.

use leptos::prelude::*;
use leptos::wasm_bindgen::JsCast;

/// Draws the markup `html` makes into `node`'s element whenever it
/// changes, and returns its first markup for the element's `inner_html`:
/// the server's page carries it, and the browser does not draw that again
/// on hydrating.
pub fn region(node: NodeRef<leptos::html::Div>, html: impl Fn() -> String + Send + Sync + 'static) -> String {
    #[cfg(feature = "hydrate")]
    let target: Target = Box::new(move || node.get().map(|div| (div.into(), false)));
    #[cfg(not(feature = "hydrate"))]
    let (target, _) = ((), node);
    drawn(target, Box::new(html), true)
}

/// Draws `element` itself (its attributes and children: `html` is its own
/// markup, one element) whenever that changes, from now on: a message of
/// the list (messages.rs), created by the browser.
#[cfg(feature = "hydrate")]
pub fn element(element: leptos::web_sys::HtmlElement, html: impl Fn() -> String + Send + Sync + 'static) {
    drawn(Box::new(move || Some((element.clone(), true))), Box::new(html), false);
}

/// Where a redraw goes: the element, and whether the markup is the
/// element's own (else its children's); none while it is not in the page.
#[cfg(feature = "hydrate")]
type Target = Box<dyn Fn() -> Option<(leptos::web_sys::HtmlElement, bool)>>;
#[cfg(not(feature = "hydrate"))]
type Target = ();

/// [`region`] and [`element`] for any markup: one memo and one effect in
/// the WASM, not one per part. `shown`: the first markup is in the page
/// already (the server drew it).
fn drawn(target: Target, html: Box<dyn Fn() -> String + Send + Sync>, shown: bool) -> String {
    let html = Memo::new(move |_| html());
    let first = html.get_untracked();
    #[cfg(not(feature = "hydrate"))]
    let _ = (target, shown);
    #[cfg(feature = "hydrate")]
    {
        let drawn = if shown { first.clone() } else { String::new() };
        Effect::new(move |last: Option<String>| {
            let html = html.get();
            let last = last.unwrap_or_else(|| drawn.clone());
            if html == last {
                return last;
            }
            match target() {
                Some((element, outer)) => {
                    redraw(&element, &html, outer);
                    html
                }
                // Not in the page yet: drawn once it is (a part's `node` is tracked).
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

/// Redraws `root` (with `outer`, `root` itself; else its children) to
/// `html` in place (`js/dom.js`): elements still there
/// stay the same nodes, so the control under the pointer, focus, typed
/// text and its caret survive. When the focused control went away or
/// became disabled, focus goes to its row's `+` for a `−`
/// (`…remove-N` → `…add-N`), else to the part's own home.
#[cfg(feature = "hydrate")]
pub fn redraw(root: &leptos::web_sys::HtmlElement, html: &str, outer: bool) {
    use leptos::web_sys::HtmlElement;
    let focused = document().active_element().filter(|a| root.contains(Some(a)));
    crate::js::morph(root, html, outer);
    let Some(focused) = focused else { return };
    if focused.is_connected() && !focused.has_attribute("disabled") {
        return;
    }
    // The same control drawn anew, else a `−`'s `+`, else the part's home.
    let key = focused.get_attribute("data-focus").unwrap_or_default();
    let target = [key.clone(), key.replace("remove-", "add-")]
        .iter()
        .filter_map(|key| root.query_selector(&format!("[data-focus=\"{key}\"]")).ok().flatten())
        .find(|el| !el.has_attribute("disabled"))
        .or_else(|| root.query_selector("[data-focus-home]").ok().flatten());
    if let Some(el) = target.and_then(|e| e.dyn_into::<HtmlElement>().ok()) {
        let _ = el.focus();
    }
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
