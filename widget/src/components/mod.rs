//! The widget's screen, one file per part: the page shell and the app
//! frame here, then the Caddie host bar, the messages (with their cards and
//! components), the action card, the MenuCart and the composer.

mod action_card;
mod composer;
mod history;
mod host_bar;
mod menu_cart;
mod messages;

use leptos::prelude::*;

use crate::intents;
use crate::state::Chat;
use crate::wire::i18n::{self, Msg};
use crate::wire::{CaddieBar, WidgetBoot};
use composer::Composer;
use history::HistoryPanel;
use host_bar::CaddieHostBar;
use messages::MessageList;

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
                {(!theme_css.is_empty()).then(|| view! { <style nonce=nonce>{format!(":root:root{{{theme_css}}}")}</style> })}
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
    view! {
        <div class="ca-widget" class:ca-full-page=full_page class:ca-embedded=framed>
            {(full_page && !framed).then(|| view! { <CaddieHostBar bar/> })}
            <header class="ca-header">
                <h1 class="ca-title">{boot.title.clone()}</h1>
                {demo.then(|| view! {
                    <span class="ca-demo" title=t(Msg::DemoHint)>{t(Msg::DemoBadge)}</span>
                })}
                <button type="button" class="ca-icon-button ca-history-button" title=t(Msg::History)
                    on:click=move |_| intents::show_history(chat) disabled=move || chat.busy.get()>
                    <span aria-hidden="true">"☰"</span>
                    <span class="ca-sr-only">{t(Msg::History)}</span>
                </button>
                <button type="button" class="ca-icon-button ca-new" title=t(Msg::NewConversation)
                    on:click=move |_| intents::reset(chat) disabled=move || chat.busy.get()>
                    <span aria-hidden="true">"+"</span>
                    <span class="ca-sr-only">{t(Msg::NewConversation)}</span>
                </button>
                {if framed {
                    ().into_any()
                } else if full_page {
                    view! {
                        <a class="ca-done" href=move || project_url(bar, false)>{t(Msg::Done)}</a>
                    }.into_any()
                } else {
                    view! {
                        <button type="button" class="ca-icon-button ca-close" on:click=move |_| intents::close()>
                            <span aria-hidden="true">"×"</span>
                            <span class="ca-sr-only">{t(Msg::CloseChat)}</span>
                        </button>
                    }.into_any()
                }}
            </header>
            <Show when=move || touring.get()>
                <section class="ca-tour" role="region" aria-labelledby="ca-tour-title">
                    <h2 id="ca-tour-title">{t(Msg::TourTitle)}</h2>
                    <p>{t(Msg::TourText)}</p>
                    <div class="ca-action-buttons">
                        // Framed, the tour's close is the hub's page itself.
                        <a class="ca-button ca-link-button" href=move || project_url(bar, true)
                            target=framed.then_some("_top")>{t(Msg::TourFinish)}</a>
                        <button type="button" class="ca-button ca-secondary" on:click=move |_| touring.set(false)>{t(Msg::TourSkip)}</button>
                    </div>
                </section>
            </Show>
            // The log stays (hidden) while the list is open: no second copy of its views in the WASM.
            <MessageList/>
            {move || chat.history.with(Option::is_some).then(|| view! { <HistoryPanel/> })}
            <p class="ca-activity" aria-hidden="true">{move || chat.activity.get()}</p>
            {move || chat.error.get().map(|message| view! {
                <div class="ca-error" role="alert">
                    <span>
                        {message}
                        // Counted down here, said once by the live region (`announce`).
                        <span class="ca-wait" aria-hidden="true">{move || match chat.wait_seconds.get() {
                            0 => String::new(),
                            n => format!(" {}", chat.words.fill(Msg::Wait, "{n}", &n.to_string())),
                        }}</span>
                    </span>
                    <button type="button" class="ca-retry" disabled=move || chat.wait_seconds.get() != 0
                        on:click=move |_| intents::retry(chat)>{t(Msg::Retry)}</button>
                </div>
            })}
            <Composer/>
            <p class="ca-sr-only" aria-live="polite" aria-atomic="true">{move || chat.announce.get()}</p>
        </div>
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
