//! Acme Bistro, the demo host: a real Remote Tools server
//! (remote-tools-contract.md) for the menu of acme-bistro-api-contract.md,
//! mounted by this binary under `/bistro/api` behind its own bearer secret.
//! The demo workspace connects to it over HTTP like any other host.

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::secret::Secret;
use crate::state::AppState;

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

/// The bistro's own settings: its bearer secret and where its pages live.
#[derive(Clone, Debug)]
pub struct Bistro {
    pub secret: Secret,
    pub public_url: String,
}

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/bistro/api/tools", get(list_tools))
        .route("/bistro/api/context", get(get_context))
        .route("/bistro/api/tools/preview", post(preview_tool))
        .route("/bistro/api/tools/execute", post(execute_tool))
        .route("/bistro/menu", get(menu_page))
}

#[derive(Deserialize)]
struct ToolCall {
    tool: String,
    #[serde(default)]
    arguments: Value,
}

fn error(status: StatusCode, message: &str) -> Response {
    (status, Json(json!({ "error": message }))).into_response()
}

/// Every API call must carry the bistro's secret (contract, "Authentication").
fn authorized(state: &AppState, headers: &HeaderMap) -> bool {
    let token = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or("");
    state.bistro.secret.matches(token)
}

async fn list_tools(State(state): State<AppState>, headers: HeaderMap) -> Response {
    if !authorized(&state, &headers) {
        return error(StatusCode::UNAUTHORIZED, "bad secret");
    }
    Json(json!({ "tools": [{
        "name": "show_menu",
        "description": "Show Acme Bistro's menu: every dish with its id, name, price in whole US dollars and kind. \
                        Use it before talking about dishes or prices.",
        "verb": "get",
        "inputSchema": { "type": "object", "properties": {
            "customer": { "type": "string", "description": "The diner's name, if known" } } },
    }]}))
    .into_response()
}

async fn get_context(State(state): State<AppState>, headers: HeaderMap) -> Response {
    if !authorized(&state, &headers) {
        return error(StatusCode::UNAUTHORIZED, "bad secret");
    }
    Json(json!({ "restaurant": "Acme Bistro", "currency": "USD", "page": "menu" })).into_response()
}

async fn preview_tool(State(state): State<AppState>, headers: HeaderMap, body: Option<Json<ToolCall>>) -> Response {
    if !authorized(&state, &headers) {
        return error(StatusCode::UNAUTHORIZED, "bad secret");
    }
    let Some(Json(call)) = body else { return error(StatusCode::BAD_REQUEST, "body must be a tool call") };
    match call.tool.as_str() {
        "show_menu" => Json(json!({ "preview": "Show the menu" })).into_response(),
        _ => error(StatusCode::NOT_FOUND, "unknown tool"),
    }
}

async fn execute_tool(State(state): State<AppState>, headers: HeaderMap, body: Option<Json<ToolCall>>) -> Response {
    if !authorized(&state, &headers) {
        return error(StatusCode::UNAUTHORIZED, "bad secret");
    }
    let Some(Json(call)) = body else { return error(StatusCode::BAD_REQUEST, "body must be a tool call") };
    match call.tool.as_str() {
        "show_menu" => {
            let customer = customer(&call.arguments);
            Json(json!({ "output": show_menu(&state.bistro, &customer) })).into_response()
        }
        _ => error(StatusCode::NOT_FOUND, "unknown tool"),
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

/// `show_menu`'s output: the contract's fields plus `display` cards.
pub fn show_menu(bistro: &Bistro, customer: &str) -> Value {
    let items: Vec<Value> = MENU
        .iter()
        .map(|i| json!({ "id": i.id, "name": i.name, "price": i.price, "kind": i.kind, "available": true }))
        .collect();
    let display: Vec<Value> = MENU
        .iter()
        .map(|i| {
            json!({
                "title": i.name,
                "url": format!("{}/bistro/menu#{}", bistro.public_url, i.id),
                "subtitle": format!("${} · {}", i.price, i.kind),
                "badges": [i.kind],
            })
        })
        .collect();
    json!({
        "status": format!("Acme Bistro menu is ready for {customer}. Build the order here; pay at checkout."),
        "customer": customer,
        "items": items,
        "display": display,
    })
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
