//! The Caddie host bar (caddie-tool-contract-ct1.md §6), worn by the
//! full-page app launched from Caddie.

use leptos::prelude::*;

use crate::state::Chat;
use crate::wire::CaddieBar;
use crate::wire::i18n::Msg;

/// 40 px: “Part of {project} on Caddie · ← Back to project”.
#[component]
pub fn CaddieHostBar(bar: RwSignal<CaddieBar>) -> impl IntoView {
    let chat = expect_context::<Chat>();
    // The project's name goes where the language puts it, in bold.
    let part_of = chat.t(Msg::HostbarPartOf);
    let (before, after) = part_of.split_once("{project}").unwrap_or((&part_of, ""));
    let (before, after) = (before.to_owned(), format!("{after} · "));
    view! {
        <nav class="ca-hostbar" aria-label=chat.t(Msg::HostbarLabel)>
            <span class="ca-hostbar-text">
                {before}<strong>{move || bar.with(|b| b.project_name.clone())}</strong>{after}
            </span>
            <a class="ca-hostbar-back" href=move || bar.with(|b| b.return_url.clone())>{chat.t(Msg::HostbarBack)}</a>
        </nav>
    }
}
