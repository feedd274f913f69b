//! The widget's components and its client state.

use leptos::prelude::*;

use crate::wire::{CaddieBar, DisplayCard, MenuCartData, PendingAction, WidgetBoot};

/// The whole HTML document of the widget page (server side).
pub fn shell(options: LeptosOptions) -> impl IntoView {
    let boot = use_context::<WidgetBoot>().unwrap_or_default();
    let boot_json = serde_json::to_string(&boot).unwrap_or_default();
    let css = format!("/pkg/{}.css", options.output_name);
    let title = format!("{} assistant", boot.title);
    // `:root:root` outranks the stylesheet's dark-mode rule, so a host's accent holds in both modes.
    let theme_css = boot.theme.css();
    let nonce = use_nonce();
    view! {
        <!DOCTYPE html>
        <html lang="en" data-theme=boot.theme.mode.clone()>
            <head>
                <meta charset="utf-8"/>
                <meta name="viewport" content="width=device-width, initial-scale=1, interactive-widget=resizes-content"/>
                <meta name="ca-boot" content=boot_json/>
                <title>{title}</title>
                <link rel="stylesheet" href=css/>
                {(!theme_css.is_empty()).then(|| view! { <style nonce=nonce>{format!(":root:root{{{theme_css}}}")}</style> })}
                <HydrationScripts options/>
            </head>
            <body>
                <App/>
            </body>
        </html>
    }
}

/// Who wrote a message.
#[cfg_attr(not(feature = "hydrate"), expect(dead_code, reason = "used by the browser-only client"))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    User,
    Assistant,
}

/// One message on screen. Signals, so streaming updates only its own text.
#[derive(Clone, Copy)]
pub struct Bubble {
    pub id: u64,
    pub role: Role,
    pub text: RwSignal<String>,
    /// Sanitized HTML from the server, once the message is finished.
    pub html: RwSignal<Option<String>>,
    pub cards: RwSignal<Vec<DisplayCard>>,
    /// Rich results shown with the message, rendered by kind.
    pub components: RwSignal<Vec<Component>>,
    /// The stream broke before the message was finished.
    pub interrupted: RwSignal<bool>,
}

/// A rich result on screen. `data` changes in place when a later result
/// (or the component's own buttons) refreshes its kind.
#[derive(Clone)]
pub struct Component {
    pub id: String,
    pub kind: String,
    /// The kind's data as JSON text.
    pub data: RwSignal<String>,
}

/// The chat's state, shared by the components (`Copy`: all signals).
#[derive(Clone, Copy)]
pub struct Chat {
    pub bubbles: RwSignal<Vec<Bubble>>,
    pub conversation_id: RwSignal<Option<String>>,
    pub token: RwSignal<Option<String>>,
    pub busy: RwSignal<bool>,
    #[cfg_attr(not(feature = "hydrate"), expect(dead_code, reason = "used by the browser-only client"))]
    pub turn_id: RwSignal<Option<String>>,
    /// "Running show menu…" while a `get` tool runs.
    pub activity: RwSignal<Option<String>>,
    /// Polite announcements for screen readers: a reply started, finished.
    pub announce: RwSignal<String>,
    pub error: RwSignal<Option<String>>,
    /// The last message sent, for Retry.
    pub last_sent: RwSignal<Option<String>>,
    /// The change waiting for the user's answer, if any.
    pub action: RwSignal<Option<PendingAction>>,
    /// An answer to the action is on its way.
    pub action_busy: RwSignal<bool>,
    /// Why the last answer to the action did not go through.
    pub action_error: RwSignal<Option<String>>,
    next_id: StoredValue<u64>,
    /// The App's owner, for the signals of every message.
    owner: StoredValue<Option<Owner>>,
}

impl Chat {
    pub fn new() -> Self {
        Self {
            bubbles: RwSignal::new(Vec::new()),
            conversation_id: RwSignal::new(None),
            token: RwSignal::new(None),
            busy: RwSignal::new(false),
            turn_id: RwSignal::new(None),
            activity: RwSignal::new(None),
            announce: RwSignal::new(String::new()),
            error: RwSignal::new(None),
            last_sent: RwSignal::new(None),
            action: RwSignal::new(None),
            action_busy: RwSignal::new(false),
            action_error: RwSignal::new(None),
            next_id: StoredValue::new(0),
            owner: StoredValue::new(Owner::current()),
        }
    }

    /// Runs `f` under the chat's own owner: signals made for a message must
    /// outlive whatever view's handler made them (a Retry button that is
    /// gone once clicked, say).
    fn owned<T>(&self, f: impl FnOnce() -> T) -> T {
        match self.owner.get_value() {
            Some(owner) => owner.with(f),
            None => f(),
        }
    }

    /// Appends a message and returns it.
    #[cfg_attr(not(feature = "hydrate"), expect(dead_code, reason = "used by the browser-only client"))]
    pub fn push(&self, role: Role, text: &str) -> Bubble {
        let id = self.next_id.get_value();
        self.next_id.set_value(id + 1);
        let bubble = self.owned(|| Bubble {
            id,
            role,
            text: RwSignal::new(text.to_owned()),
            html: RwSignal::new(None),
            cards: RwSignal::new(Vec::new()),
            components: RwSignal::new(Vec::new()),
            interrupted: RwSignal::new(false),
        });
        self.bubbles.update(|b| b.push(bubble));
        bubble
    }

    /// Shows a component with `reply`, or — for an update — refreshes the
    /// ones of its kind already on screen. Every component of a kind shows
    /// the newest data: they are views of one thing, such as a cart.
    #[cfg_attr(not(feature = "hydrate"), expect(dead_code, reason = "used by the browser-only client"))]
    pub fn show_component(&self, reply: Bubble, id: String, kind: String, data: String, update: bool) {
        let shown = self.refresh_kind(&kind, &data);
        if update && shown {
            return;
        }
        let data = self.owned(|| RwSignal::new(data));
        reply.components.update(|c| c.push(Component { id, kind, data }));
    }

    /// Gives every component of `kind` new data; false if none is shown.
    pub fn refresh_kind(&self, kind: &str, data: &str) -> bool {
        let mut shown = false;
        for bubble in self.bubbles.get_untracked() {
            bubble.components.with_untracked(|components| {
                for c in components.iter().filter(|c| c.kind == kind) {
                    c.data.set(data.to_owned());
                    shown = true;
                }
            });
        }
        shown
    }

    /// Sends `text` as the user's next message.
    pub fn send(&self, text: String) {
        if text.trim().is_empty() || self.busy.get_untracked() || self.token.get_untracked().is_none() {
            return;
        }
        #[cfg(feature = "hydrate")]
        crate::client::send(*self, text);
        #[cfg(not(feature = "hydrate"))]
        let _ = text;
    }

    /// Asks the server to stop the running turn.
    pub fn stop(&self) {
        #[cfg(feature = "hydrate")]
        crate::client::stop(*self);
    }

    /// Answers the pending action: `confirm`, `apply` or `cancel`.
    pub fn answer(&self, verb: &'static str, reason: Option<String>) {
        if self.action_busy.get_untracked() || self.busy.get_untracked() {
            return;
        }
        #[cfg(feature = "hydrate")]
        crate::client::answer(*self, verb, reason);
        #[cfg(not(feature = "hydrate"))]
        let _ = (verb, reason);
    }

    /// Starts a new, empty conversation.
    pub fn reset(&self) {
        if self.busy.get_untracked() {
            return;
        }
        self.action.set(None);
        self.bubbles.set(Vec::new());
        self.conversation_id.set(None);
        self.error.set(None);
        #[cfg(feature = "hydrate")]
        crate::client::forget_conversation();
    }
}

impl Default for Chat {
    fn default() -> Self {
        Self::new()
    }
}

/// The widget.
#[component]
pub fn App() -> impl IntoView {
    let boot = use_context::<WidgetBoot>().unwrap_or_default();
    let chat = Chat::new();
    // The full-page app's token comes with the page: server and browser
    // render the same connected composer.
    chat.token.set(boot.token.clone());
    provide_context(chat);
    #[cfg(feature = "hydrate")]
    crate::client::start(chat, boot.clone());
    let demo = boot.demo_model;
    let caddie = boot.caddie.clone();
    let full_page = caddie.is_some();
    let bar = RwSignal::new(caddie.clone().unwrap_or_default());
    #[cfg(feature = "hydrate")]
    if full_page {
        crate::client::caddie_context(bar);
    }
    let touring = RwSignal::new(caddie.as_ref().is_some_and(|c| c.tour));
    view! {
        <div class="ca-widget" class:ca-full-page=full_page>
            {full_page.then(|| view! { <CaddieHostBar bar/> })}
            <header class="ca-header">
                <h1 class="ca-title">{boot.title.clone()}</h1>
                {demo.then(|| view! {
                    <span class="ca-demo" title="Answers come from the built-in offline demo model, which follows simple rules">
                        "Demo model (offline)"
                    </span>
                })}
                <button type="button" class="ca-icon-button ca-new" title="New conversation"
                    on:click=move |_| chat.reset() disabled=move || chat.busy.get()>
                    <span aria-hidden="true">"+"</span>
                    <span class="ca-sr-only">"New conversation"</span>
                </button>
                {if full_page {
                    view! {
                        <a class="ca-done" href=move || project_url(bar, false)>"Done"</a>
                    }.into_any()
                } else {
                    view! {
                        <button type="button" class="ca-icon-button ca-close" on:click=move |_| close_widget()>
                            <span aria-hidden="true">"×"</span>
                            <span class="ca-sr-only">"Close chat"</span>
                        </button>
                    }.into_any()
                }}
            </header>
            <Show when=move || touring.get()>
                <section class="ca-tour" role="region" aria-labelledby="ca-tour-title">
                    <h2 id="ca-tour-title">"Your assistant for this stage"</h2>
                    <p>"Ask anything in the box below. When the assistant wants to change something, it shows you \
                        the change first and does nothing until you press Apply."</p>
                    <div class="ca-action-buttons">
                        <a class="ca-button ca-link-button" href=move || project_url(bar, true)>"Finish the tour"</a>
                        <button type="button" class="ca-button ca-secondary" on:click=move |_| touring.set(false)>"Skip"</button>
                    </div>
                </section>
            </Show>
            <MessageList/>
            <p class="ca-activity" aria-hidden="true">{move || chat.activity.get()}</p>
            {move || chat.error.get().map(|message| view! {
                <div class="ca-error" role="alert">
                    <span>{message}</span>
                    <button type="button" class="ca-retry" on:click=move |_| {
                        chat.error.set(None);
                        if let Some(text) = chat.last_sent.get_untracked() {
                            chat.send(text);
                        }
                    }>"Retry"</button>
                </div>
            })}
            <Composer/>
            <p class="ca-sr-only" aria-live="polite" aria-atomic="true">{move || chat.announce.get()}</p>
        </div>
    }
}

/// The Caddie host bar (caddie-tool-contract-ct1.md §6): 40 px, “Part of
/// {project} on Caddie · ← Back to project”.
#[component]
fn CaddieHostBar(bar: RwSignal<CaddieBar>) -> impl IntoView {
    view! {
        <nav class="ca-hostbar" aria-label="Caddie">
            <span class="ca-hostbar-text">
                "Part of "<strong>{move || bar.with(|b| b.project_name.clone())}</strong>" on Caddie · "
            </span>
            <a class="ca-hostbar-back" href=move || bar.with(|b| b.return_url.clone())>"← Back to project"</a>
        </nav>
    }
}

/// `returnToProject()` as a link, so it works before the page is hydrated:
/// the hub's project page, with `?tour=done` at the end of the guided
/// introduction.
fn project_url(bar: RwSignal<CaddieBar>, tour_done: bool) -> String {
    let url = bar.with(|b| b.return_url.clone());
    if !tour_done || url.is_empty() {
        return url;
    }
    let separator = if url.contains('?') { '&' } else { '?' };
    format!("{url}{separator}tour=done")
}

fn close_widget() {
    #[cfg(feature = "hydrate")]
    crate::client::post_to_host("ca:close");
}

/// The conversation, as a log: assistive technology hears the
/// announcements, not every streamed token.
#[component]
fn MessageList() -> impl IntoView {
    let chat = expect_context::<Chat>();
    let log = NodeRef::<leptos::html::Div>::new();
    // Keep the newest text in view while it streams.
    Effect::new(move |_| {
        let bubbles = chat.bubbles.get();
        if let Some(last) = bubbles.last() {
            last.text.track();
            last.cards.track();
        }
        if let Some(el) = log.get() {
            el.set_scroll_top(el.scroll_height());
        }
    });
    view! {
        <div class="ca-log" role="log" aria-live="off" aria-label="Conversation" node_ref=log tabindex="0">
            <Show when=move || chat.bubbles.with(Vec::is_empty)>
                <p class="ca-empty">"Hi! Ask me about this site — for example, “show me the menu”."</p>
            </Show>
            <For each=move || chat.bubbles.get() key=|b| b.id let:bubble>
                <MessageBubble bubble/>
            </For>
            <ActionCard/>
        </div>
    }
}

#[component]
fn MessageBubble(bubble: Bubble) -> impl IntoView {
    let class = match bubble.role {
        Role::User => "ca-msg ca-user",
        Role::Assistant => "ca-msg ca-assistant",
    };
    let who = match bubble.role {
        Role::User => "You",
        Role::Assistant => "Assistant",
    };
    view! {
        <div class=class data-interrupted=move || bubble.interrupted.get().then_some("true")>
            <span class="ca-sr-only">{who}": "</span>
            {move || match bubble.html.get() {
                Some(html) => view! { <div class="ca-md" inner_html=html></div> }.into_any(),
                None => view! { <p class="ca-text">{move || bubble.text.get()}</p> }.into_any(),
            }}
            <CardList cards=bubble.cards/>
            <For each=move || bubble.components.get() key=|c| c.id.clone() let:component>
                <ComponentSlot component/>
            </For>
            <Show when=move || bubble.interrupted.get()>
                <p class="ca-interrupted">"This reply was cut off before it finished."</p>
            </Show>
        </div>
    }
}

/// Sanitized link cards; every field is text.
#[component]
fn CardList(cards: RwSignal<Vec<DisplayCard>>) -> impl IntoView {
    view! {
        <Show when=move || cards.with(|c| !c.is_empty())>
            <ul class="ca-cards" aria-label="Results">
                <For each=move || cards.get() key=|c| c.url.clone() let:card>
                    <li class="ca-card">
                        {card.image.clone().map(|src| view! {
                            <img class="ca-card-image" src=src alt=card.title.clone() loading="lazy" referrerpolicy="no-referrer"/>
                        })}
                        <div class="ca-card-body">
                            <a class="ca-card-title" href=card.url.clone() target="_blank" rel="noopener noreferrer">
                                {card.title.clone()}
                            </a>
                            {card.subtitle.clone().map(|s| view! { <p class="ca-card-subtitle">{s}</p> })}
                            <Show when={
                                let empty = card.badges.is_empty();
                                move || !empty
                            }>
                                <ul class="ca-badges">
                                    {card.badges.iter().map(|b| view! { <li class="ca-badge">{b.clone()}</li> }).collect_view()}
                                </ul>
                            </Show>
                        </div>
                    </li>
                </For>
            </ul>
        </Show>
    }
}

/// Renders a component by its kind; a kind this widget does not know shows
/// nothing.
#[component]
fn ComponentSlot(component: Component) -> impl IntoView {
    match component.kind.as_str() {
        "menu_cart" => view! { <MenuCart id=component.id data=component.data/> }.into_any(),
        _ => ().into_any(),
    }
}

/// The bistro's menu and cart: dishes grouped by kind, `+`/`−` and a note
/// per line (the user's own clicks, sent straight to the cart tools), a
/// running total for display only, and Checkout — which goes through the
/// assistant, so the user sees the preview and applies it.
///
/// Drawn as one escaped HTML string with two delegated listeners rather
/// than as dozens of small reactive views: the same markup costs a fraction
/// of the WASM (the widget's size is a budget). Every value from the host is
/// escaped (`menu_cart_html`), and focus survives each redraw.
#[component]
fn MenuCart(id: String, data: RwSignal<String>) -> impl IntoView {
    let chat = expect_context::<Chat>();
    let menu = Memo::new(move |_| data.with(|text| parse_menu(text)));
    let busy = RwSignal::new(false);
    let error = RwSignal::new(None::<String>);
    let id = StoredValue::new(id);
    let root = NodeRef::<leptos::html::Section>::new();
    let html = Memo::new(move |_| {
        menu.with(|m| m.as_ref().map(|m| crate::wire::menu_cart_html(m, chat.busy.get())).unwrap_or_default())
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
        if busy.get_untracked() {
            return;
        }
        #[cfg(feature = "hydrate")]
        crate::client::call_component(chat, id.get_value(), tool, arguments, busy, error);
        #[cfg(not(feature = "hydrate"))]
        let _ = (tool, arguments, id);
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
            (Some("checkout"), _) => chat.send("Check out my order".into()),
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
        <section class="ca-menu-cart" aria-label="Menu and cart" aria-busy=move || busy.get().to_string()
            node_ref=root on:click=on_click on:change=on_change></section>
        {move || error.get().map(|e| view! { <p class="ca-mc-error" role="alert">{e}</p> })}
    }
}

/// One argument of a component's tool call.
#[derive(Clone, Debug)]
#[cfg_attr(not(feature = "hydrate"), expect(dead_code, reason = "read by the browser-only client"))]
pub enum Arg {
    Text(String),
    Number(u32),
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

/// The change the assistant proposes: the host's preview as plain text,
/// Apply and Cancel (with an optional reason). A delete takes two steps,
/// worded differently, before anything is deleted.
#[component]
fn ActionCard() -> impl IntoView {
    let chat = expect_context::<Chat>();
    let declining = RwSignal::new(false);
    let reason = RwSignal::new(String::new());
    let busy = move || chat.action_busy.get();
    move || {
        chat.action.get().map(|action| {
            let is_delete = action.confirmations_required == 2;
            let confirmed = action.status == "confirmed_once";
            let title = match (is_delete, confirmed) {
                (false, _) => "Apply this change?",
                (true, false) => "Delete this?",
                (true, true) => "This cannot be undone",
            };
            let buttons = if declining.get() {
                view! {
                    <label class="ca-sr-only" for="ca-reason">"Reason (optional)"</label>
                    <input id="ca-reason" class="ca-reason" type="text" maxlength="500" placeholder="Reason (optional)"
                        prop:value=move || reason.get() on:input=move |ev| reason.set(event_target_value(&ev))/>
                    <div class="ca-action-buttons">
                        <button type="button" class="ca-button" disabled=busy on:click=move |_| {
                            let text = reason.get_untracked().trim().to_owned();
                            declining.set(false);
                            reason.set(String::new());
                            chat.answer("cancel", (!text.is_empty()).then_some(text));
                        }>"Cancel the change"</button>
                        <button type="button" class="ca-button ca-secondary" disabled=busy
                            on:click=move |_| declining.set(false)>"Back"</button>
                    </div>
                }
                .into_any()
            } else {
                let (primary, verb) = match (is_delete, confirmed) {
                    (false, _) => ("Apply", "apply"),
                    (true, false) => ("Delete…", "confirm"),
                    (true, true) => ("Yes, delete permanently", "apply"),
                };
                let secondary = if is_delete && confirmed { "Keep it" } else { "Cancel" };
                view! {
                    <div class="ca-action-buttons">
                        <button type="button" class="ca-button" class:ca-danger=is_delete disabled=busy
                            on:click=move |_| chat.answer(verb, None)>{primary}</button>
                        <button type="button" class="ca-button ca-secondary" disabled=busy
                            on:click=move |_| declining.set(true)>{secondary}</button>
                    </div>
                }
                .into_any()
            };
            view! {
                <section id="ca-action" class="ca-action" class:ca-action-delete=is_delete role="group"
                    aria-labelledby="ca-action-title" tabindex="-1">
                    <h2 id="ca-action-title" class="ca-action-title">{title}</h2>
                    <p class="ca-action-preview">{action.preview.clone()}</p>
                    {(is_delete && confirmed).then(|| view! {
                        <p class="ca-action-warning">"This permanently deletes it. Are you sure?"</p>
                    })}
                    {move || chat.action_error.get().map(|e| view! { <p class="ca-action-error" role="alert">{e}</p> })}
                    {buttons}
                </section>
            }
        })
    }
}

/// Enter sends, Shift+Enter starts a new line; Stop while a reply streams.
#[component]
fn Composer() -> impl IntoView {
    let chat = expect_context::<Chat>();
    let draft = RwSignal::new(String::new());
    let submit = move || {
        let text = draft.get_untracked().trim().to_owned();
        if text.is_empty() || chat.busy.get_untracked() || chat.token.get_untracked().is_none() {
            return;
        }
        draft.set(String::new());
        chat.send(text);
    };
    view! {
        <form class="ca-composer" on:submit=move |ev| {
            ev.prevent_default();
            submit();
        }>
            <label class="ca-sr-only" for="ca-input">"Message"</label>
            <textarea id="ca-input" class="ca-input" rows="1" maxlength="8000"
                placeholder=move || if chat.token.get().is_some() { "Type a message…" } else { "Connecting…" }
                prop:value=move || draft.get()
                on:input=move |ev| draft.set(event_target_value(&ev))
                on:keydown=move |ev: leptos::ev::KeyboardEvent| {
                    if ev.key() == "Enter" && !ev.shift_key() && !ev.is_composing() {
                        ev.prevent_default();
                        submit();
                    }
                }
            ></textarea>
            {move || if chat.busy.get() {
                view! {
                    <button type="button" class="ca-button ca-stop" on:click=move |_| chat.stop()>"Stop"</button>
                }.into_any()
            } else {
                view! {
                    <button type="submit" class="ca-button ca-send" disabled=move || chat.token.get().is_none()>"Send"</button>
                }.into_any()
            }}
        </form>
    }
}
