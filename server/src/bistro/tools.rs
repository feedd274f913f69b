//! The bistro's five tools (acme-bistro-api-contract.md), preview and
//! execute. Prices, availability and the cart are the server's own; the
//! arguments only name dishes and quantities.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::cart::{self, CartLine};
use super::checkout;
use super::menu::{BistroState, MENU, MenuItem, customer, menu_cart, show_menu};

/// A refusal with its status (contract, "Error format").
/// A JSON error answer, `{"error": message}`.
pub(super) fn error(status: StatusCode, message: &str) -> Response {
    (status, Json(json!({ "error": message }))).into_response()
}

pub struct ToolError(StatusCode, String);

impl IntoResponse for ToolError {
    fn into_response(self) -> Response {
        error(self.0, &self.1)
    }
}

fn bad(message: impl Into<String>) -> ToolError {
    ToolError(StatusCode::BAD_REQUEST, message.into())
}

fn failed(e: anyhow::Error) -> ToolError {
    tracing::error!(error = format!("{e:#}"), "bistro: cart storage failed");
    ToolError(StatusCode::INTERNAL_SERVER_ERROR, "the kitchen's system failed".into())
}

/// The dish named by `item`, on the menu and available.
fn dish(arguments: &Value) -> Result<&'static MenuItem, ToolError> {
    let id = arguments.get("item").and_then(Value::as_str).ok_or_else(|| bad("item is required"))?;
    MENU.iter().find(|m| m.id == id).ok_or_else(|| bad(format!("unknown item `{id}`")))
}

/// The dish, unless it is sold out.
fn available(state: &BistroState, item: &'static MenuItem) -> Result<&'static MenuItem, ToolError> {
    if state.bistro.is_available(item.id) { Ok(item) } else { Err(bad(format!("{} is sold out", item.name))) }
}

/// Refuses a cart holding a sold-out dish: it must not reach a paid order.
fn all_available(state: &BistroState, lines: &[CartLine]) -> Result<(), ToolError> {
    match lines.iter().find(|l| !state.bistro.is_available(&l.item)) {
        Some(line) => Err(bad(format!(
            "{} is sold out: remove it before checking out",
            cart::menu_item(line).map_or(line.item.as_str(), |m| m.name)
        ))),
        None => Ok(()),
    }
}

/// `quantity`: an integer ≥ 1 (default 1), at most 20 at a time.
fn quantity(arguments: &Value) -> Result<i64, ToolError> {
    match arguments.get("quantity") {
        None | Some(Value::Null) => Ok(1),
        Some(q) => q
            .as_i64()
            .filter(|q| (1..=20).contains(q))
            .ok_or_else(|| bad("quantity must be a whole number from 1 to 20")),
    }
}

fn notes(arguments: &Value) -> Option<String> {
    arguments
        .get("notes")
        .and_then(Value::as_str)
        .map(|n| n.chars().filter(|c| !c.is_control()).take(200).collect::<String>().trim().to_owned())
}

fn who(customer_key: Option<String>) -> Result<String, ToolError> {
    customer_key.ok_or_else(|| bad("execution.externalUserId is required"))
}

pub(super) fn cart_json(lines: &[CartLine]) -> Value {
    json!({
        "lines": lines.iter().map(|l| json!({
            "item": l.item, "name": cart::menu_item(l).map(|m| m.name), "quantity": l.quantity,
            "notes": l.notes, "line_total": cart::line_total(l),
        })).collect::<Vec<_>>(),
        "subtotal": cart::subtotal(lines),
    })
}

fn describe(lines: &[CartLine]) -> String {
    lines
        .iter()
        .map(|l| {
            let name = cart::menu_item(l).map_or(l.item.as_str(), |m| m.name);
            let notes = if l.notes.is_empty() { String::new() } else { format!(" ({})", l.notes) };
            format!("{} × {name}{notes}", l.quantity)
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// What a tool would do, without doing it.
pub async fn preview(
    state: &BistroState,
    tool: &str,
    arguments: &Value,
    key: Option<String>,
) -> Result<String, ToolError> {
    match tool {
        "show_menu" => Ok("Show the menu".into()),
        "add_to_cart" => {
            let (item, n) = (available(state, dish(arguments)?)?, quantity(arguments)?);
            let notes = notes(arguments).filter(|n| !n.is_empty()).map(|n| format!(" ({n})")).unwrap_or_default();
            Ok(format!("Add {n} × {}{notes} to your order — ${}", item.name, i64::from(item.price) * n))
        }
        "remove_from_cart" => Ok(format!("Remove one {} from your order", dish(arguments)?.name)),
        "set_notes" => {
            let item = dish(arguments)?;
            Ok(match notes(arguments).filter(|n| !n.is_empty()) {
                Some(n) => format!("Note for the {}: {n}", item.name),
                None => format!("Remove the note on the {}", item.name),
            })
        }
        "create_checkout" => {
            let lines = cart::lines(&state.pool, &who(key)?).await.map_err(failed)?;
            if lines.is_empty() {
                return Err(bad("the cart is empty"));
            }
            Ok(format!(
                "Check out {} — total ${}, payable on a link valid 15 minutes",
                describe(&lines),
                cart::subtotal(&lines)
            ))
        }
        "clear_cart" => Ok("Empty your cart: every dish in it is removed".into()),
        _ => Err(ToolError(StatusCode::NOT_FOUND, "unknown tool".into())),
    }
}

/// Does it.
pub async fn execute(
    state: &BistroState,
    tool: &str,
    arguments: &Value,
    key: Option<String>,
) -> Result<Value, ToolError> {
    let name = customer(arguments);
    match tool {
        "show_menu" => {
            let lines = match key {
                Some(key) => cart::lines(&state.pool, &key).await.map_err(failed)?,
                None => Vec::new(),
            };
            Ok(show_menu(&state.bistro, &name, cart_json(&lines)))
        }
        "add_to_cart" => {
            let key = who(key)?;
            let (item, n, notes) = (available(state, dish(arguments)?)?, quantity(arguments)?, notes(arguments));
            cart::add(&state.pool, &key, item.id, n, notes.as_deref()).await.map_err(failed)?;
            let lines = cart::lines(&state.pool, &key).await.map_err(failed)?;
            let line = lines.iter().find(|l| l.item == item.id);
            Ok(json!({
                "status": format!("Added {n} × {} for {name}. Cart subtotal: ${}.", item.name, cart::subtotal(&lines)),
                "item": item.id, "quantity": n, "notes": notes.unwrap_or_default(),
                "line_total": line.map_or(0, cart::line_total), "cart_subtotal": cart::subtotal(&lines),
                "cart": cart_json(&lines),
                "component": menu_cart(&state.bistro, cart_json(&lines), true),
            }))
        }
        "set_notes" => {
            let key = who(key)?;
            let item = dish(arguments)?;
            let notes = notes(arguments).ok_or_else(|| bad("notes is required"))?;
            if !cart::set_notes(&state.pool, &key, item.id, &notes).await.map_err(failed)? {
                return Err(bad(format!("{} is not in the cart", item.name)));
            }
            let lines = cart::lines(&state.pool, &key).await.map_err(failed)?;
            Ok(json!({
                "status": format!("Noted for the {}: {}.", item.name, if notes.is_empty() { "no note" } else { &notes }),
                "item": item.id, "notes": notes,
                "cart": cart_json(&lines),
                "component": menu_cart(&state.bistro, cart_json(&lines), true),
            }))
        }
        "remove_from_cart" => {
            let key = who(key)?;
            let item = dish(arguments)?;
            cart::remove_one(&state.pool, &key, item.id).await.map_err(failed)?;
            let lines = cart::lines(&state.pool, &key).await.map_err(failed)?;
            let line = lines.iter().find(|l| l.item == item.id);
            Ok(json!({
                "status": format!("Removed one {} for {name}. Cart subtotal: ${}.", item.name, cart::subtotal(&lines)),
                "item": item.id,
                "line_total": line.map_or(0, cart::line_total), "cart_subtotal": cart::subtotal(&lines),
                "cart": cart_json(&lines),
                "component": menu_cart(&state.bistro, cart_json(&lines), true),
            }))
        }
        "create_checkout" => {
            let lines = cart::lines(&state.pool, &who(key)?).await.map_err(failed)?;
            if lines.is_empty() {
                return Err(bad("the cart is empty"));
            }
            all_available(state, &lines)?;
            let total = u32::try_from(cart::subtotal(&lines)).map_err(|_| bad("the total is out of range"))?;
            let exp = crate::ids::now_secs() + checkout::LINK_TTL_SECS;
            let token = checkout::cart_token(&lines);
            let url = format!(
                "{}/bistro/pay?{}",
                state.bistro.public_url,
                checkout::sign(&state.bistro.checkout_key, &token, total, exp)
            );
            let expires_at = time::OffsetDateTime::from_unix_timestamp(exp)
                .ok()
                .and_then(|t| t.format(&time::format_description::well_known::Rfc3339).ok())
                .unwrap_or_default();
            Ok(json!({
                "status": format!("Ready to pay for {name}'s order."),
                "summary": format!("{name}'s Acme Bistro order · {total} USD"),
                "checkoutUrl": url,
                "expires_at": expires_at,
                "display": [{ "title": format!("Pay ${total} for your Acme Bistro order"), "url": url,
                              "subtitle": describe(&lines), "badges": ["Link valid 15 minutes"] }],
            }))
        }
        "clear_cart" => {
            cart::clear(&state.pool, &who(key)?).await.map_err(failed)?;
            Ok(json!({ "status": format!("Emptied {name}'s cart."), "cart_subtotal": 0,
                       "component": menu_cart(&state.bistro, cart_json(&[]), true) }))
        }
        _ => Err(ToolError(StatusCode::NOT_FOUND, "unknown tool".into())),
    }
}
