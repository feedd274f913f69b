//! `/console`: the host's console (pages in the `console` crate). Every
//! form calls the public API in process with the credential the session
//! signed in with, so the console can do exactly what the API allows and
//! nothing more; the credential stays on the server, sealed.
//!
//! - Sessions: a random token in an `HttpOnly`, `SameSite=Strict` cookie
//!   (`__Host-ca_console`, `Secure`, whenever the browser came over https),
//!   stored as its hash, eight hours.
//! - Every POST must come from our own pages (Fetch Metadata, else
//!   `Origin`): another site's form — sign-in included — is refused.
//! - No page is framable (`frame-ancestors 'none'`, `X-Frame-Options`) or
//!   cached, and none runs script but the console's own (`script-src
//!   'self'`): its WASM hydrates the page from the data the server left in
//!   it, for copy buttons and the live look; every form works without it.
//!
//! The handlers take a [`Signed`] (or [`InWorkspace`]) request, which has
//! already checked all of that, and answer pages or the answer that
//! replaced them (`Result<Response, Response>`).

mod entry;
mod knowledge;
mod operations;
mod records;
mod setup;
mod shared;
mod test_runs;
mod usage;

use axum::Router;
use axum::routing::{get, post};

pub use setup::PREVIEW_USER;
pub use shared::ConsoleState;

pub fn router(state: ConsoleState) -> Router {
    Router::new()
        .route("/console", get(entry::home))
        .route("/console/sign-in", post(entry::sign_in))
        .route("/console/sign-out", post(entry::sign_out))
        .route("/console/workspaces", post(entry::create_workspace))
        .route("/console/workspace", post(setup::save_workspace))
        .route("/console/connect", post(setup::connect))
        .route("/console/check", post(setup::check))
        .route("/console/mcp/connect", post(setup::connect_mcp))
        .route("/console/mcp/check", post(setup::check_mcp))
        .route("/console/mcp/disconnect", post(setup::disconnect_mcp))
        .route("/console/mcp/app-permissions", post(setup::save_app_permissions))
        .route("/console/attachments", post(setup::save_attachment_types))
        .route("/console/theme", post(setup::save_theme))
        .route("/console/welcome", post(setup::save_welcome))
        .route("/console/preview", get(setup::preview))
        .route("/console/preview/token", post(setup::preview_token))
        .route("/console/audit", get(records::audit))
        .route("/console/audit/export", get(records::export_audit))
        .route("/console/conversations", get(records::conversations))
        .route("/console/conversations/{id}", get(records::conversation))
        .route("/console/conversations/{id}/save-as-test", post(test_runs::save_as_test))
        .route("/console/usage", get(usage::usage))
        .route("/console/knowledge", get(knowledge::knowledge))
        .route("/console/knowledge/sources", post(knowledge::add_source))
        .route("/console/knowledge/snippets", post(knowledge::add_snippet))
        .route("/console/knowledge/files", post(knowledge::add_file).layer(axum::extract::DefaultBodyLimit::disable()))
        .route("/console/knowledge/only", post(knowledge::save_only))
        .route("/console/knowledge/{id}/sync", post(knowledge::sync_source))
        .route("/console/knowledge/{id}/remove", post(knowledge::remove_source))
        .route("/console/tests", get(test_runs::tests))
        .route("/console/tests/run", post(test_runs::run))
        .route("/console/tests/upload", post(test_runs::upload))
        .route("/console/tests/compare", get(test_runs::compare))
        .route("/console/tests/{id}", get(test_runs::show))
        .route("/console/tests/{id}/edit", post(test_runs::edit))
        .route("/console/operations", get(operations::operations))
        .route("/console/rotate/embed-secret", post(operations::rotate_embed_secret))
        .route("/console/rotate/api-key", post(operations::rotate_api_key))
        .route("/console/retention", post(operations::save_retention))
        .route("/console/erase", post(operations::erase_user))
        .with_state(state)
}
