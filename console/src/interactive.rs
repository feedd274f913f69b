//! What needs script, once the page is hydrated: copy buttons, and the
//! live preview following the look's controls before they are saved.
//! Without script none of it shows, and every form still works.

use std::time::Duration;

use leptos::prelude::*;

use super::Theme;

/// True once the page is hydrated (effects run only in the browser), so
/// controls that need script appear only where they work.
fn hydrated() -> ReadSignal<bool> {
    let (hydrated, set_hydrated) = signal(false);
    Effect::new(move |_| set_hydrated.set(true));
    hydrated
}

/// Copies `text` to the clipboard; false when the browser refused.
#[cfg(feature = "hydrate")]
async fn copy_text(text: &str) -> bool {
    let Some(window) = web_sys::window() else { return false };
    let promise = window.navigator().clipboard().write_text(text);
    wasm_bindgen_futures::JsFuture::from(promise).await.is_ok()
}

#[cfg(not(feature = "hydrate"))]
async fn copy_text(_: &str) -> bool {
    false
}

/// "Copy …": puts `text` on the clipboard and says whether it did.
#[component]
pub fn CopyButton(text: String, #[prop(into)] what: String) -> impl IntoView {
    let ready = hydrated();
    let (copied, set_copied) = signal(None::<bool>);
    let text = StoredValue::new(text);
    let label = format!("Copy {what}");
    move || {
        ready.get().then(|| {
            let copy = move |_| {
                leptos::task::spawn_local(async move {
                    let done = copy_text(&text.get_value()).await;
                    set_copied.set(Some(done));
                });
            };
            view! {
                <span class="copy">
                    <button type="button" class="button secondary small" on:click=copy>{label.clone()}</button>
                    <span class="hint" aria-live="polite">
                        {move || match copied.get() {
                            Some(true) => "Copied.",
                            Some(false) => "The browser would not copy it: select it instead.",
                            None => "",
                        }}
                    </span>
                </span>
            }
        })
    }
}

/// The preview's page, in the saved look.
const PREVIEW: &str = "/console/preview";
/// How long the preview waits after the last change before it reloads.
const SETTLE: Duration = Duration::from_millis(400);

/// The look's controls as they are now, and the preview that follows them.
#[derive(Clone, Copy)]
pub struct Look {
    /// Mode, accent, radius, font: as the controls hold them.
    values: RwSignal<[String; 4]>,
    saved: StoredValue<[String; 4]>,
    /// The preview's address, moved once the controls settle.
    src: RwSignal<String>,
    /// Changes so far: a reload waits for the last one.
    changes: RwSignal<u64>,
}

impl Look {
    pub fn new(theme: &Theme) -> Self {
        let saved = [
            theme.mode.clone().unwrap_or_default(),
            theme.accent.clone().unwrap_or_default(),
            theme.radius.map(|r| r.to_string()).unwrap_or_default(),
            theme.font.clone().unwrap_or_default(),
        ];
        Self {
            values: RwSignal::new(saved.clone()),
            saved: StoredValue::new(saved),
            src: RwSignal::new(PREVIEW.to_owned()),
            changes: RwSignal::new(0),
        }
    }

    fn set(self, index: usize, value: String) {
        self.values.update(|values| values[index] = value.trim().to_owned());
        let change = self.changes.get_untracked() + 1;
        self.changes.set(change);
        set_timeout(
            move || {
                if self.changes.get_untracked() == change {
                    self.src.set(preview_src(&self.values.get_untracked()));
                }
            },
            SETTLE,
        );
    }

    pub fn set_mode(self, value: String) {
        self.set(0, value);
    }

    pub fn set_accent(self, value: String) {
        self.set(1, value);
    }

    pub fn set_radius(self, value: String) {
        self.set(2, value);
    }

    pub fn set_font(self, value: String) {
        self.set(3, value);
    }

    /// True while the controls hold something not saved.
    fn unsaved(self) -> bool {
        self.values.with(|values| self.saved.with_value(|saved| values != saved))
    }
}

/// The preview in exactly this look (`look=1`: an empty value is the
/// default, not the saved one).
pub fn preview_src(values: &[String; 4]) -> String {
    let mut query = String::from("look=1");
    for (key, value) in ["theme", "accent", "radius", "font"].into_iter().zip(values) {
        query.push_str(&format!("&{key}={}", encode(value)));
    }
    format!("{PREVIEW}?{query}")
}

/// `value` percent-encoded for a query (only unreserved bytes kept).
fn encode(value: &str) -> String {
    value
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// The live preview: the widget page in the look the controls hold.
#[component]
pub fn LivePreview(look: Look) -> impl IntoView {
    let ready = hydrated();
    view! {
        {move || (ready.get() && look.unsaved()).then(|| view! {
            <p class="hint" role="status">"Preview only: “Save the look” gives it to your visitors."</p>
        })}
        {
            // Built by hand: `loading` is no typed attribute of an iframe.
            leptos::html::iframe()
                .attr("loading", "lazy")
                .class("preview")
                .title("Live preview of the assistant")
                .src(move || look.src.get())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_preview_address_carries_exactly_the_look() {
        let values = ["dark".to_owned(), "#aa3300".to_owned(), String::new(), "Inter, sans-serif".to_owned()];
        assert_eq!(
            preview_src(&values),
            "/console/preview?look=1&theme=dark&accent=%23aa3300&radius=&font=Inter%2C%20sans-serif"
        );
        assert_eq!(encode("a&b=c<"), "a%26b%3Dc%3C");
    }
}
