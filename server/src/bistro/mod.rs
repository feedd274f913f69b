//! Acme Bistro, the demo host: a real Remote Tools server
//! (remote-tools-contract.md) for the menu of acme-bistro-api-contract.md,
//! mounted by this binary under `/bistro/api` behind its own bearer secret.
//! The demo workspace connects to it over HTTP like any other host.

pub mod cart;
pub mod checkout;
mod tools;

use std::sync::Arc;

use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::db::Pool;
use crate::secret::Secret;

/// One dish (acme-bistro-api-contract.md §1): stable id, whole-dollar price.
#[derive(Debug, Clone, Copy)]
pub struct MenuItem {
    pub id: &'static str,
    pub name: &'static str,
    pub price: u32,
    pub kind: &'static str,
}

/// The menu; the ids are the contract's stable enum.
pub const MENU: [MenuItem; 5] = [
    MenuItem { id: "stone_pizza", name: "Stone-baked Margherita", price: 14, kind: "Mains" },
    MenuItem { id: "roast_bowl", name: "Harvest Roast Bowl", price: 13, kind: "Mains" },
    MenuItem { id: "house_salad", name: "House Garden Salad", price: 11, kind: "Starters" },
    MenuItem { id: "lemon_tart", name: "Lemon Tart", price: 8, kind: "Desserts" },
    MenuItem { id: "sparkling", name: "Sparkling Water", price: 4, kind: "Drinks" },
];

/// The bistro's own settings: its bearer secret, the key that signs its
/// checkout links, and where its pages live.
#[derive(Clone, Debug)]
pub struct Bistro {
    pub secret: Secret,
    pub checkout_key: Secret,
    pub public_url: String,
    /// Dishes shown as unavailable: they cannot be added or checked out.
    pub sold_out: Vec<String>,
}

impl Bistro {
    pub fn is_available(&self, id: &str) -> bool {
        !self.sold_out.iter().any(|s| s == id)
    }
}

/// What the bistro's routes share: the database (carts) and its settings.
#[derive(Clone)]
pub struct BistroState {
    pub pool: Pool,
    pub bistro: Arc<Bistro>,
}

pub fn router(state: BistroState) -> Router {
    Router::new()
        .route("/bistro/api/tools", get(list_tools))
        .route("/bistro/api/context", get(get_context))
        .route("/bistro/api/tools/preview", post(preview_tool))
        .route("/bistro/api/tools/execute", post(execute_tool))
        .route("/bistro/menu", get(menu_page))
        .route("/bistro/pay", get(pay_page))
        .with_state(state)
}

#[derive(Deserialize)]
struct ToolCall {
    tool: String,
    #[serde(default)]
    arguments: Value,
    #[serde(default)]
    execution: Execution,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct Execution {
    #[serde(default)]
    workspace_id: String,
    #[serde(default)]
    external_user_id: String,
}

impl Execution {
    /// Whose cart: the workspace and the user the assistant acts for.
    fn customer_key(&self) -> Option<String> {
        (!self.external_user_id.is_empty()).then(|| format!("{}:{}", self.workspace_id, self.external_user_id))
    }
}

fn error(status: StatusCode, message: &str) -> Response {
    (status, Json(json!({ "error": message }))).into_response()
}

/// Every API call must carry the bistro's secret (contract, "Authentication").
fn authorized(state: &BistroState, headers: &HeaderMap) -> bool {
    let token = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or("");
    state.bistro.secret.matches(token)
}

async fn list_tools(State(state): State<BistroState>, headers: HeaderMap) -> Response {
    if !authorized(&state, &headers) {
        return error(StatusCode::UNAUTHORIZED, "bad secret");
    }
    let ids: Vec<&str> = MENU.iter().map(|i| i.id).collect();
    Json(json!({ "tools": [
        { "name": "show_menu", "verb": "get",
          "description": "Show Acme Bistro's menu (every dish with its id, name, price in whole US dollars and kind) \
                          and the diner's current cart. Use it before talking about dishes, prices or the cart.",
          "inputSchema": { "type": "object", "properties": {
              "customer": { "type": "string", "description": "The diner's name, if known" } } } },
        { "name": "add_to_cart", "verb": "update",
          "description": "Add a dish to the diner's cart, with an optional note for the kitchen.",
          "inputSchema": { "type": "object", "required": ["item"], "properties": {
              "item": { "type": "string", "enum": ids, "description": "The dish's id from show_menu" },
              "quantity": { "type": "integer", "minimum": 1, "maximum": 20, "default": 1 },
              "notes": { "type": "string", "maxLength": 200, "description": "e.g. no basil" },
              "customer": { "type": "string" } } } },
        { "name": "set_notes", "verb": "update",
          "description": "Change the kitchen note of a dish already in the diner's cart (an empty note removes it).",
          "inputSchema": { "type": "object", "required": ["item", "notes"], "properties": {
              "item": { "type": "string", "enum": ids },
              "notes": { "type": "string", "maxLength": 200 }, "customer": { "type": "string" } } } },
        { "name": "remove_from_cart", "verb": "update",
          "description": "Remove one of a dish from the diner's cart.",
          "inputSchema": { "type": "object", "required": ["item"], "properties": {
              "item": { "type": "string", "enum": ids }, "customer": { "type": "string" } } } },
        { "name": "create_checkout", "verb": "create",
          "description": "Make a signed payment link for the diner's cart, valid 15 minutes. The diner pays on the link.",
          "inputSchema": { "type": "object", "properties": { "customer": { "type": "string" } } } },
        { "name": "clear_cart", "verb": "delete",
          "description": "Empty the diner's cart.",
          "inputSchema": { "type": "object", "properties": { "customer": { "type": "string" } } } },
    ]}))
    .into_response()
}

/// The scope of a GET call, as query parameters.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct ScopeQuery {
    #[serde(default)]
    workspace_id: String,
    #[serde(default)]
    external_user_id: String,
}

/// The page the diner is on and their cart as it is now: the menu's own
/// buttons change the cart between turns, and the assistant sees it here.
async fn get_context(State(state): State<BistroState>, headers: HeaderMap, Query(q): Query<ScopeQuery>) -> Response {
    if !authorized(&state, &headers) {
        return error(StatusCode::UNAUTHORIZED, "bad secret");
    }
    let execution = Execution { workspace_id: q.workspace_id, external_user_id: q.external_user_id };
    let cart = match execution.customer_key() {
        Some(key) => match cart::lines(&state.pool, &key).await {
            Ok(lines) => tools::cart_json(&lines),
            Err(e) => {
                tracing::error!(error = format!("{e:#}"), "bistro: cannot read the cart");
                return error(StatusCode::INTERNAL_SERVER_ERROR, "the kitchen's system failed");
            }
        },
        None => json!({ "lines": [], "subtotal": 0 }),
    };
    Json(json!({ "restaurant": "Acme Bistro", "currency": "USD", "page": "menu", "cart": cart })).into_response()
}

async fn preview_tool(State(state): State<BistroState>, headers: HeaderMap, body: Option<Json<ToolCall>>) -> Response {
    if !authorized(&state, &headers) {
        return error(StatusCode::UNAUTHORIZED, "bad secret");
    }
    let Some(Json(call)) = body else { return error(StatusCode::BAD_REQUEST, "body must be a tool call") };
    match tools::preview(&state, &call.tool, &call.arguments, call.execution.customer_key()).await {
        Ok(preview) => Json(json!({ "preview": preview })).into_response(),
        Err(e) => e.into_response(),
    }
}

async fn execute_tool(State(state): State<BistroState>, headers: HeaderMap, body: Option<Json<ToolCall>>) -> Response {
    if !authorized(&state, &headers) {
        return error(StatusCode::UNAUTHORIZED, "bad secret");
    }
    let Some(Json(call)) = body else { return error(StatusCode::BAD_REQUEST, "body must be a tool call") };
    match tools::execute(&state, &call.tool, &call.arguments, call.execution.customer_key()).await {
        Ok(output) => Json(json!({ "output": output })).into_response(),
        Err(e) => e.into_response(),
    }
}

fn customer(arguments: &Value) -> String {
    arguments
        .get("customer")
        .and_then(Value::as_str)
        .map(|c| c.trim().chars().take(60).collect::<String>())
        .filter(|c| !c.is_empty())
        .unwrap_or_else(|| "Guest".into())
}

/// The tools the menu's own buttons may call (never `clear_cart`, a delete).
pub const MENU_CART_TOOLS: [&str; 3] = ["add_to_cart", "remove_from_cart", "set_notes"];

/// The `menu_cart` component: the menu and the diner's cart, for the
/// widget's MenuCart. `update` refreshes the one already shown.
pub fn menu_cart(bistro: &Bistro, cart: Value, update: bool) -> Value {
    json!({
        "kind": "menu_cart",
        "data": { "items": menu_items(bistro), "cart": cart },
        "tools": MENU_CART_TOOLS,
        "update": update,
    })
}

fn menu_items(bistro: &Bistro) -> Vec<Value> {
    MENU.iter()
        .map(|i| json!({ "id": i.id, "name": i.name, "price": i.price, "kind": i.kind, "available": bistro.is_available(i.id) }))
        .collect()
}

/// `show_menu`'s output: the contract's fields, `display` cards and the
/// `menu_cart` component.
pub fn show_menu(bistro: &Bistro, customer: &str, cart: Value) -> Value {
    let items = menu_items(bistro);
    let display: Vec<Value> = MENU
        .iter()
        .map(|i| {
            json!({
                "title": i.name,
                "url": format!("{}/bistro/menu#{}", bistro.public_url, i.id),
                "subtitle": if bistro.is_available(i.id) {
                    format!("${} · {}", i.price, i.kind)
                } else {
                    format!("${} · {} · sold out", i.price, i.kind)
                },
                "badges": [i.kind],
            })
        })
        .collect();
    json!({
        "status": format!("Acme Bistro menu is ready for {customer}. Build the order here; pay at checkout."),
        "customer": customer,
        "items": items,
        "component": menu_cart(bistro, cart.clone(), false),
        "cart": cart,
        "display": display,
    })
}

#[derive(Deserialize)]
struct PayQuery {
    cart: Option<String>,
    total: Option<String>,
    src: Option<String>,
    exp: Option<String>,
    sig: Option<String>,
}

/// The demo's stand-in for pay.acme.example: it shows the verified order
/// and takes no payment; a link that does not verify starts over.
async fn pay_page(State(state): State<BistroState>, Query(q): Query<PayQuery>) -> Response {
    let verified = checkout::verify(
        &state.bistro.checkout_key,
        q.cart.as_deref(),
        q.total.as_deref(),
        q.src.as_deref(),
        q.exp.as_deref(),
        q.sig.as_deref(),
        crate::ids::now_secs(),
    );
    let body = match verified {
        Ok(order) => {
            let mut rows = String::new();
            for (id, quantity) in &order.lines {
                let item = MENU.iter().find(|m| m.id == *id).expect("verified ids are on the menu");
                rows.push_str(&format!(
                    "<tr><td>{quantity} × {}</td><td class=\"price\">${}</td></tr>",
                    item.name,
                    item.price * quantity
                ));
            }
            format!(
                "<h1>Your order</h1><table class=\"order\">{rows}<tr class=\"total\"><th>Total</th>\
                 <th class=\"price\" data-total=\"{total}\">${total}</th></tr></table>\
                 <p class=\"demo-note\">This is a demo checkout: no card is asked for and nothing is charged.</p>",
                total = order.total
            )
        }
        Err(reason) => {
            tracing::info!(?reason, "checkout link refused");
            "<h1>Cart expired — start again</h1><p>This checkout link is no longer valid. \
             Go back to the chat and check out again.</p><p><a href=\"/\">Back to Acme Bistro</a></p>"
                .to_owned()
        }
    };
    let mut response = Html(format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>Checkout · Acme Bistro</title><link rel=\"stylesheet\" href=\"/demo.css\"></head>\
         <body class=\"bistro\"><main>{body}</main></body></html>"
    ))
    .into_response();
    // The signed link must not leak onwards through a Referer.
    response.headers_mut().insert(header::REFERRER_POLICY, axum::http::HeaderValue::from_static("no-referrer"));
    response.headers_mut().insert(header::CACHE_CONTROL, axum::http::HeaderValue::from_static("no-store"));
    response
}

/// The page the menu cards link to.
async fn menu_page() -> Html<String> {
    let mut rows = String::new();
    for item in MENU {
        rows.push_str(&format!(
            "<li id=\"{}\"><strong>{}</strong> <span>${}</span> <em>{}</em></li>",
            item.id, item.name, item.price, item.kind
        ));
    }
    Html(format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>Menu · Acme Bistro</title><link rel=\"stylesheet\" href=\"/demo.css\"></head>\
         <body class=\"bistro\"><main><h1>Acme Bistro menu</h1><ul class=\"menu\">{rows}</ul>\
         <p><a href=\"/\">Back to Acme Bistro</a></p></main></body></html>"
    ))
}
