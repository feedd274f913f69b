//! Hydration as `leptos::mount::hydrate_body` does it, with a shared
//! context that reads no serialized data. Leptos' own
//! (`HydrateSharedContext`) reads the resources, errors and streamed chunks
//! the server serialized into the page; the widget has none of them (no
//! resources, no error boundaries, no suspense: its data comes by its own
//! requests), and their readers cost the opened widget's WASM code of
//! their own (docs/benchmarks.md, issue #47). Everything else is
//! `hydrate_from`'s, step for step (leptos 0.8.23, src/mount.rs).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use hydration_context::{PinnedFuture, PinnedStream, SerializedDataId, SharedContext};
use leptos::prelude::*;
use leptos::reactive::owner::Owner;
use leptos::tachys::hydration::Cursor;
use leptos::tachys::view::{PositionState, RenderHtml};
use leptos::wasm_bindgen::JsCast;
use throw_error::{Error, ErrorId};

/// Hydrates `<body>` with the view `f` draws, and keeps it mounted.
pub fn hydrate_body<N: IntoView>(f: impl FnOnce() -> N + 'static) {
    // wasm-bindgen-futures drives the reactive system (an error only says
    // it already does).
    _ = any_spawner::Executor::init_wasm_bindgen();
    let owner = Owner::new_root(Some(Arc::new(Hydrating::default())));
    let body = document().body().expect("the page has a body");
    let mounted = owner
        .with(move || f().into_view().hydrate::<true>(&Cursor::new(body.unchecked_into()), &PositionState::default()));
    if let Some(shared) = Owner::current_shared_context() {
        shared.hydration_complete();
    }
    // Mounted, and its reactive owner alive, for the page's life (what
    // `hydrate_body` does with its `UnmountHandle`).
    std::mem::forget((owner, mounted));
}

/// The browser's side of hydration with nothing serialized to read.
#[derive(Debug)]
struct Hydrating {
    id: AtomicUsize,
    is_hydrating: AtomicBool,
    during_hydration: AtomicBool,
}

impl Default for Hydrating {
    fn default() -> Self {
        Self { id: AtomicUsize::new(0), is_hydrating: AtomicBool::new(true), during_hydration: AtomicBool::new(true) }
    }
}

impl SharedContext for Hydrating {
    fn is_browser(&self) -> bool {
        true
    }

    fn next_id(&self) -> SerializedDataId {
        SerializedDataId::new(self.id.fetch_add(1, Ordering::Relaxed))
    }

    fn write_async(&self, _id: SerializedDataId, _fut: PinnedFuture<String>) {}

    fn read_data(&self, _id: &SerializedDataId) -> Option<String> {
        None
    }

    fn await_data(&self, _id: &SerializedDataId) -> Option<String> {
        None
    }

    fn pending_data(&self) -> Option<PinnedStream<String>> {
        None
    }

    fn during_hydration(&self) -> bool {
        self.during_hydration.load(Ordering::Relaxed)
    }

    fn hydration_complete(&self) {
        self.during_hydration.store(false, Ordering::Relaxed);
    }

    fn get_is_hydrating(&self) -> bool {
        self.is_hydrating.load(Ordering::Relaxed)
    }

    fn set_is_hydrating(&self, is_hydrating: bool) {
        self.is_hydrating.store(is_hydrating, Ordering::Relaxed);
    }

    fn take_errors(&self) -> Vec<(SerializedDataId, ErrorId, Error)> {
        Vec::new()
    }

    fn errors(&self, _boundary_id: &SerializedDataId) -> Vec<(ErrorId, Error)> {
        Vec::new()
    }

    fn seal_errors(&self, _boundary_id: &SerializedDataId) {}

    fn register_error(&self, _error_boundary: SerializedDataId, _error_id: ErrorId, _error: Error) {}

    fn defer_stream(&self, _wait_for: PinnedFuture<()>) {}

    fn await_deferred(&self) -> Option<PinnedFuture<()>> {
        None
    }

    fn set_incomplete_chunk(&self, _id: SerializedDataId) {}

    fn get_incomplete_chunk(&self, _id: &SerializedDataId) -> bool {
        false
    }
}
