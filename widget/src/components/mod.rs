//! The widget's screen, one file per part: the page shell and the app
//! frame here, then the Caddie host bar, the messages (with their cards and
//! components), the action card, the MenuCart and the composer.

mod action_card;
mod alert;
mod cards;
mod composer;
mod elicitation;
mod history;
mod menu_cart;
mod messages;
mod region;
mod reply_tools;
mod start;
mod top;

use leptos::prelude::*;

use crate::intents;
use crate::state::Chat;
use crate::wire::WidgetBoot;
use crate::wire::i18n::{self, Msg};
use composer::Composer;
use history::HistoryPanel;
use messages::MessageList;
use region::region;

/// The page's first script: messages from the framing page (the host's
/// token) wait in `caEarly` until the WASM takes them.
const EARLY_MESSAGES: &str =
    "window.caEarly=[];addEventListener('message',function(e){if(e.source===parent)(window.caEarly||[]).push(e)})";

/// The whole HTML document of the widget page (server side).
pub fn shell(options: LeptosOptions) -> impl IntoView {
    let boot = use_context::<WidgetBoot>().unwrap_or_default();
    let boot_json = serde_json::to_string(&boot).unwrap_or_default();
    let css = format!("/pkg/{}.css", options.output_name);
    let title =
        i18n::fill(boot.words.get(Msg::PageTitle as usize).map_or("{name}", String::as_str), "{name}", &boot.title);
    let lang = if boot.lang.is_empty() { "en".to_owned() } else { boot.lang.clone() };
    let dir = i18n::direction(&lang);
    // `:root:root` outranks the stylesheet's dark-mode rule, so a host's accent holds in both modes.
    let theme_css = boot.theme.css();
    let nonce = use_nonce();
    view! {
        <!DOCTYPE html>
        <html lang=lang dir=dir data-theme=boot.theme.mode.clone()>
            <head>
                <meta charset="utf-8"/>
                <meta name="viewport" content="width=device-width, initial-scale=1, interactive-widget=resizes-content"/>
                <meta name="ca-boot" content=boot_json/>
                <title>{title}</title>
                <link rel="stylesheet" href=css/>
                {(!theme_css.is_empty()).then(|| view! { <style nonce=nonce.clone()>{format!(":root:root{{{theme_css}}}")}</style> })}
                // Keeps what the framing page says before the WASM listens (client::session).
                <script nonce=nonce.clone() inner_html=EARLY_MESSAGES></script>
                <HydrationScripts options/>
            </head>
            <body>
                <App/>
            </body>
        </html>
    }
}

/// The widget.
#[component]
pub fn App() -> impl IntoView {
    let boot = use_context::<WidgetBoot>().unwrap_or_default();
    let chat = Chat::new(boot.words.clone());
    let t = move |m| chat.t(m);
    // The full-page app's token comes with the page: server and browser
    // render the same connected composer.
    chat.token.set(boot.token.clone());
    provide_context(chat);
    #[cfg(feature = "hydrate")]
    crate::client::session::start(chat, boot.clone());
    let demo = boot.demo_model;
    let caddie = boot.caddie.clone();
    let full_page = caddie.is_some();
    // Framed in the hub's project page (embed mode): no host bar, no Done.
    let embedded = caddie.as_ref().and_then(|c| c.embed_hub.clone());
    let framed = embedded.is_some();
    let bar = RwSignal::new(caddie.clone().unwrap_or_default());
    #[cfg(feature = "hydrate")]
    match embedded {
        Some(hub) => crate::client::embed::start(chat, hub, boot.title.clone()),
        None if full_page => crate::client::host_page::caddie_context(bar),
        None => {}
    }
    let touring = RwSignal::new(caddie.as_ref().is_some_and(|c| c.tour));
    let top = NodeRef::new();
    let title = boot.title.clone();
    let first_top = region(top, move || {
        bar.with(|bar| {
            let top =
                top::Top { title: &title, demo, full_page, framed, bar, busy: chat.busy.get(), touring: touring.get() };
            top::markup(&top, &t)
        })
    });
    // The top's and the alert's controls, by one listener (each costs the
    // WASM a kilobyte); the other parts answer their own, by other names.
    let on_click = move |ev: leptos::ev::MouseEvent| match region::action_of(&ev).map(|(_, a)| a).as_deref() {
        Some("history") => intents::show_history(chat),
        Some("new") => intents::reset(chat),
        Some("close") => intents::close(),
        Some("skip") => touring.set(false),
        Some("retry") => intents::retry(chat),
        _ => {}
    };
    let alert = NodeRef::new();
    let first_alert = region(alert, move || {
        let wait = alert::wait_text(chat, chat.wait_seconds.get_untracked());
        chat.error.with(|error| alert::markup(error.as_deref(), &wait, chat.offline.get(), &t))
    });
    #[cfg(feature = "hydrate")]
    alert::count_down(chat, alert);
    view! {
        <div class="ca-widget" class:ca-full-page=full_page class:ca-embedded=framed on:click=on_click>
            <div class="ca-part" node_ref=top inner_html=first_top></div>
            // The log stays (hidden) while the list is open: no second copy of its views in the WASM.
            <MessageList/>
            <HistoryPanel/>
            <p class="ca-activity" aria-hidden="true">{move || chat.activity.get()}</p>
            <div class="ca-part" node_ref=alert inner_html=first_alert></div>
            <Composer/>
            <p class="ca-sr-only" aria-live="polite" aria-atomic="true">{move || chat.announce.get()}</p>
        </div>
    }
}
