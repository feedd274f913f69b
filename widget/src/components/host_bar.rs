//! The Caddie host bar (caddie-tool-contract-ct1.md §6), worn by the
//! full-page app launched from Caddie.

use leptos::prelude::*;

use crate::wire::CaddieBar;

/// 40 px: “Part of {project} on Caddie · ← Back to project”.
#[component]
pub fn CaddieHostBar(bar: RwSignal<CaddieBar>) -> impl IntoView {
    view! {
        <nav class="ca-hostbar" aria-label="Caddie">
            <span class="ca-hostbar-text">
                "Part of "<strong>{move || bar.with(|b| b.project_name.clone())}</strong>" on Caddie · "
            </span>
            <a class="ca-hostbar-back" href=move || bar.with(|b| b.return_url.clone())>"← Back to project"</a>
        </nav>
    }
}
