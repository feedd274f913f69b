//! Acme Bistro, the demo host: a real Remote Tools server
//! (remote-tools-contract.md) for the menu of acme-bistro-api-contract.md,
//! mounted by this binary under `/bistro/api` behind its own bearer secret.
//! The demo workspace connects to it over HTTP like any other host.
//!
//! `menu` (dishes, settings, what the tools show) → `cart` (prices and
//! totals) → `checkout` (signed links) → `tools` (what each tool does) →
//! `api` (the contract's four endpoints and the kitchen's board, where a
//! dish is marked sold out while the bistro runs); `pages` (menu and pay
//! pages).

mod api;
pub mod cart;
pub mod checkout;
pub mod help;
mod menu;
mod pages;
mod tools;

use axum::Router;
use axum::routing::{get, post};

pub use menu::{Bistro, BistroState, MENU, MENU_CART_TOOLS, MenuItem, Stock};

/// The bistro's routes: its tool API and its pages.
pub fn router(state: BistroState) -> Router {
    Router::new()
        .route("/bistro/api/tools", get(api::list_tools))
        .route("/bistro/api/context", get(api::get_context))
        .route("/bistro/api/tools/preview", post(api::preview_tool))
        .route("/bistro/api/tools/execute", post(api::execute_tool))
        .route("/bistro/api/kitchen", get(api::kitchen))
        .route("/bistro/api/kitchen/{item}", axum::routing::put(api::set_availability))
        .route("/bistro/menu", get(pages::menu_page))
        .route("/bistro/pay", get(pages::pay_page))
        .route(help::SITEMAP_PATH, get(help::sitemap))
        .route("/bistro/help/{page}", get(help::help_page))
        .with_state(state)
}
