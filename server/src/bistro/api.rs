//! The bistro's Remote Tools API (remote-tools-contract.md): `GET /tools`,
//! `GET /context`, `POST /tools/preview` and `POST /tools/execute`, each
//! behind the bistro's bearer secret.

use axum::Json;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{Value, json};

use super::cart;
use super::menu::{BistroState, MENU};
use super::tools::{self, error};

#[derive(Deserialize)]
pub(super) struct ToolCall {
    tool: String,
    /// The assistant's id of this tool call: the same in its preview and
    /// its execute (the key a preview is remembered by).
    #[serde(default, rename = "callId")]
    call_id: String,
    #[serde(default)]
    arguments: Value,
    #[serde(default)]
    execution: Execution,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub(super) struct Execution {
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

/// Every API call must carry the bistro's secret (contract, "Authentication").
fn authorized(state: &BistroState, headers: &HeaderMap) -> bool {
    let token = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or("");
    state.bistro.secret.matches(token)
}

pub(super) async fn list_tools(State(state): State<BistroState>, headers: HeaderMap) -> Response {
    if !authorized(&state, &headers) {
        return error(StatusCode::UNAUTHORIZED, "bad secret");
    }
    let ids: Vec<&str> = MENU.iter().map(|i| i.id).collect();
    // `direct`: the MenuCart's own buttons may run these at once (a cart
    // line is the diner's to change); checkout and clearing are never direct.
    Json(json!({ "tools": [
        { "name": "show_menu", "verb": "get",
          "description": "Show Acme Bistro's menu (every dish with its id, name, price in whole US dollars and kind) \
                          and the diner's current cart. Use it before talking about dishes, prices or the cart.",
          "inputSchema": { "type": "object", "properties": {
              "customer": { "type": "string", "description": "The diner's name, if known" } } } },
        { "name": "add_to_cart", "verb": "update", "direct": true,
          "description": "Add a dish to the diner's cart, with an optional note for the kitchen.",
          "inputSchema": { "type": "object", "required": ["item"], "properties": {
              "item": { "type": "string", "enum": ids, "description": "The dish's id from show_menu" },
              "quantity": { "type": "integer", "minimum": 1, "maximum": 20, "default": 1 },
              "notes": { "type": "string", "maxLength": 200, "description": "e.g. no basil" },
              "customer": { "type": "string" } } } },
        { "name": "set_notes", "verb": "update", "direct": true,
          "description": "Change the kitchen note of a dish already in the diner's cart (an empty note removes it).",
          "inputSchema": { "type": "object", "required": ["item", "notes"], "properties": {
              "item": { "type": "string", "enum": ids },
              "notes": { "type": "string", "maxLength": 200 }, "customer": { "type": "string" } } } },
        { "name": "remove_from_cart", "verb": "update", "direct": true,
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
pub(super) struct ScopeQuery {
    #[serde(default)]
    workspace_id: String,
    #[serde(default)]
    external_user_id: String,
}

/// The page the diner is on and their cart as it is now: the menu's own
/// buttons change the cart between turns, and the assistant sees it here.
pub(super) async fn get_context(
    State(state): State<BistroState>,
    headers: HeaderMap,
    Query(q): Query<ScopeQuery>,
) -> Response {
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

/// A tool call as the contract sends it, from a caller holding the secret;
/// else the status and message to refuse it with.
fn authorized_call(
    state: &BistroState,
    headers: &HeaderMap,
    body: Option<Json<ToolCall>>,
) -> Result<ToolCall, (StatusCode, &'static str)> {
    if !authorized(state, headers) {
        return Err((StatusCode::UNAUTHORIZED, "bad secret"));
    }
    body.map(|Json(call)| call).ok_or((StatusCode::BAD_REQUEST, "body must be a tool call"))
}

pub(super) async fn preview_tool(
    State(state): State<BistroState>,
    headers: HeaderMap,
    body: Option<Json<ToolCall>>,
) -> Response {
    let call = match authorized_call(&state, &headers, body) {
        Ok(call) => call,
        Err((status, message)) => return error(status, message),
    };
    let caller = tools::Caller { key: call.execution.customer_key(), call_id: &call.call_id };
    match tools::preview(&state, &call.tool, &call.arguments, &caller).await {
        Ok(preview) => Json(json!({ "preview": preview })).into_response(),
        Err(e) => e.into_response(),
    }
}

pub(super) async fn execute_tool(
    State(state): State<BistroState>,
    headers: HeaderMap,
    body: Option<Json<ToolCall>>,
) -> Response {
    let call = match authorized_call(&state, &headers, body) {
        Ok(call) => call,
        Err((status, message)) => return error(status, message),
    };
    let caller = tools::Caller { key: call.execution.customer_key(), call_id: &call.call_id };
    match tools::execute(&state, &call.tool, &call.arguments, &caller).await {
        Ok(output) => Json(json!({ "output": output })).into_response(),
        Err(e) => e.into_response(),
    }
}

/// `PUT /bistro/api/kitchen/{item}` body.
#[derive(Deserialize)]
pub(super) struct Availability {
    available: bool,
}

/// The kitchen's board: every dish, whether it can be served now, and
/// whether that is the kitchen's call (`fixed`: sold out by configuration).
async fn board(state: &BistroState) -> Response {
    match state.stock().await {
        Ok(stock) => {
            let dishes: Vec<Value> = MENU
                .iter()
                .map(|m| {
                    json!({ "item": m.id, "name": m.name, "available": stock.is_available(m.id),
                            "fixed": state.bistro.sold_out.iter().any(|s| s == m.id) })
                })
                .collect();
            Json(json!({ "dishes": dishes })).into_response()
        }
        Err(e) => {
            tracing::error!(error = format!("{e:#}"), "bistro: cannot read what is sold out");
            error(StatusCode::INTERNAL_SERVER_ERROR, "the kitchen's system failed")
        }
    }
}

/// `GET /bistro/api/kitchen`: what the kitchen can serve now.
pub(super) async fn kitchen(State(state): State<BistroState>, headers: HeaderMap) -> Response {
    if !authorized(&state, &headers) {
        return error(StatusCode::UNAUTHORIZED, "bad secret");
    }
    board(&state).await
}

/// `PUT /bistro/api/kitchen/{item}` `{"available": false}`: the kitchen
/// marks a dish sold out (or back on) while the bistro runs. A dish sold
/// out by configuration stays sold out (`409`).
pub(super) async fn set_availability(
    State(state): State<BistroState>,
    headers: HeaderMap,
    axum::extract::Path(item): axum::extract::Path<String>,
    body: Option<Json<Availability>>,
) -> Response {
    if !authorized(&state, &headers) {
        return error(StatusCode::UNAUTHORIZED, "bad secret");
    }
    let Some(dish) = MENU.iter().find(|m| m.id == item) else {
        return error(StatusCode::NOT_FOUND, "no such dish");
    };
    let Some(Json(Availability { available })) = body else {
        return error(StatusCode::BAD_REQUEST, "body must be {\"available\": true or false}");
    };
    if available && state.bistro.sold_out.iter().any(|s| s == dish.id) {
        return error(StatusCode::CONFLICT, "sold out by configuration (CA_BISTRO_SOLD_OUT)");
    }
    if let Err(e) = crate::db::kitchen::set_sold_out(&state.pool, dish.id, !available, crate::ids::now_ms()).await {
        tracing::error!(error = format!("{e:#}"), "bistro: cannot mark a dish");
        return error(StatusCode::INTERNAL_SERVER_ERROR, "the kitchen's system failed");
    }
    tracing::info!(item = dish.id, available, "bistro: the kitchen marked a dish");
    board(&state).await
}
