//! The bistro's tools (acme-bistro-api-contract.md), preview and execute.
//! Prices, availability and the cart are the server's own; the arguments
//! only name dishes and quantities.
//!
//! Stale previews (our extension of the Remote Tools contract): the
//! preview shown for a tool call is remembered, and an execute of that
//! call first works out what its preview would say now. If that differs —
//! a dish sold out, the cart changed — nothing runs and the answer is
//! `409 {"error", "stale": true}`; the assistant then asks for a fresh
//! preview of the same arguments and offers it to the diner.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::cart::{self, CartLine};
use super::checkout;
use super::menu::{BistroState, MENU, MenuItem, Stock, customer, menu_cart, show_menu};

/// A JSON error answer, `{"error": message}` (contract, "Error format").
pub(super) fn error(status: StatusCode, message: &str) -> Response {
    (status, Json(json!({ "error": message }))).into_response()
}

/// A refusal with its status.
pub struct ToolError(StatusCode, String);

impl IntoResponse for ToolError {
    fn into_response(self) -> Response {
        if self.0 == StatusCode::CONFLICT {
            return (self.0, Json(json!({ "error": self.1, "stale": true }))).into_response();
        }
        error(self.0, &self.1)
    }
}

/// The preview of this call no longer holds: nothing ran.
fn stale(message: impl Into<String>) -> ToolError {
    ToolError(StatusCode::CONFLICT, message.into())
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
fn available(stock: &Stock, item: &'static MenuItem) -> Result<&'static MenuItem, ToolError> {
    if stock.is_available(item.id) { Ok(item) } else { Err(bad(format!("{} is sold out", item.name))) }
}

/// A checkout: the cart's lines the kitchen can serve (a sold-out dish
/// never reaches a paid order) and the names of those it cannot.
fn checkout_lines(stock: &Stock, lines: Vec<CartLine>) -> Result<(Vec<CartLine>, Vec<&str>), ToolError> {
    if lines.is_empty() {
        return Err(bad("the cart is empty"));
    }
    let (served, gone): (Vec<CartLine>, Vec<CartLine>) = lines.into_iter().partition(|l| stock.is_available(&l.item));
    let gone: Vec<&str> = gone.iter().filter_map(cart::menu_item).map(|m| m.name).collect();
    if served.is_empty() {
        return Err(bad(format!("everything in the cart is sold out ({})", gone.join(", "))));
    }
    Ok((served, gone))
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

/// Who calls and for which call: the diner's cart key (if the scope names
/// a user) and the tool call's id.
pub struct Caller<'a> {
    pub key: Option<String>,
    pub call_id: &'a str,
}

/// What a tool would do, without doing it; a change's preview is
/// remembered for its call, so its execute can tell if it still holds.
pub async fn preview(
    state: &BistroState,
    tool: &str,
    arguments: &Value,
    caller: &Caller<'_>,
) -> Result<String, ToolError> {
    let stock = state.stock().await.map_err(failed)?;
    let preview = describe_change(state, &stock, tool, arguments, caller.key.clone()).await?;
    if let (Some(key), false) = (&caller.key, tool == "show_menu") {
        let now = crate::ids::now_ms();
        crate::db::kitchen::remember_preview(&state.pool, key, caller.call_id, tool, &preview, now)
            .await
            .map_err(failed)?;
    }
    Ok(preview)
}

/// A change's preview as it would read now.
async fn describe_change(
    state: &BistroState,
    stock: &Stock,
    tool: &str,
    arguments: &Value,
    key: Option<String>,
) -> Result<String, ToolError> {
    match tool {
        "show_menu" => Ok("Show the menu".into()),
        "add_to_cart" => {
            let (item, n) = (available(stock, dish(arguments)?)?, quantity(arguments)?);
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
            let (served, gone) = checkout_lines(stock, lines)?;
            let left_out = match gone.as_slice() {
                [] => String::new(),
                gone => format!(" ({} sold out: left out of this order)", gone.join(", ")),
            };
            Ok(format!(
                "Check out {} — total ${}, payable on a link valid 15 minutes{left_out}",
                describe(&served),
                cart::subtotal(&served)
            ))
        }
        "clear_cart" => Ok("Empty your cart: every dish in it is removed".into()),
        _ => Err(ToolError(StatusCode::NOT_FOUND, "unknown tool".into())),
    }
}

/// Refuses an execute whose preview no longer holds: what it would say
/// now differs from what the diner saw (or it cannot be previewed now).
async fn still_as_previewed(
    state: &BistroState,
    stock: &Stock,
    tool: &str,
    arguments: &Value,
    caller: &Caller<'_>,
) -> Result<(), ToolError> {
    let Some(key) = &caller.key else { return Ok(()) };
    let Some(shown) = crate::db::kitchen::previewed(&state.pool, key, caller.call_id, tool).await.map_err(failed)?
    else {
        return Ok(());
    };
    match describe_change(state, stock, tool, arguments, caller.key.clone()).await {
        Ok(now) if now == shown => Ok(()),
        Ok(now) => {
            tracing::info!(tool, shown, now, "bistro: stale preview, nothing ran");
            Err(stale(format!("this changed since its preview: now {now}")))
        }
        Err(ToolError(_, why)) => {
            tracing::info!(tool, shown, why, "bistro: stale preview, nothing ran");
            Err(stale(format!("this changed since its preview: {why}")))
        }
    }
}

/// Does it, if its preview (when there was one) still holds.
pub async fn execute(
    state: &BistroState,
    tool: &str,
    arguments: &Value,
    caller: &Caller<'_>,
) -> Result<Value, ToolError> {
    let stock = state.stock().await.map_err(failed)?;
    if tool != "show_menu" {
        still_as_previewed(state, &stock, tool, arguments, caller).await?;
    }
    let output = run(state, &stock, tool, arguments, caller.key.clone()).await?;
    if let Some(key) = &caller.key {
        crate::db::kitchen::forget_preview(&state.pool, key, caller.call_id).await.map_err(failed)?;
    }
    Ok(output)
}

async fn run(
    state: &BistroState,
    stock: &Stock,
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
            Ok(show_menu(&state.bistro, stock, &name, cart_json(&lines)))
        }
        "add_to_cart" => {
            let key = who(key)?;
            let (item, n, notes) = (available(stock, dish(arguments)?)?, quantity(arguments)?, notes(arguments));
            cart::add(&state.pool, &key, item.id, n, notes.as_deref()).await.map_err(failed)?;
            let lines = cart::lines(&state.pool, &key).await.map_err(failed)?;
            let line = lines.iter().find(|l| l.item == item.id);
            Ok(json!({
                "status": format!("Added {n} × {} for {name}. Cart subtotal: ${}.", item.name, cart::subtotal(&lines)),
                "item": item.id, "quantity": n, "notes": notes.unwrap_or_default(),
                "line_total": line.map_or(0, cart::line_total), "cart_subtotal": cart::subtotal(&lines),
                "cart": cart_json(&lines),
                "component": menu_cart(stock, cart_json(&lines), true),
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
                "component": menu_cart(stock, cart_json(&lines), true),
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
                "component": menu_cart(stock, cart_json(&lines), true),
            }))
        }
        "create_checkout" => {
            let lines = cart::lines(&state.pool, &who(key)?).await.map_err(failed)?;
            let (lines, gone) = checkout_lines(stock, lines)?;
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
            let left_out =
                if gone.is_empty() { String::new() } else { format!(" Sold out and left out: {}.", gone.join(", ")) };
            Ok(json!({
                "status": format!("Ready to pay for {name}'s order.{left_out}"),
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
                       "component": menu_cart(stock, cart_json(&[]), true) }))
        }
        _ => Err(ToolError(StatusCode::NOT_FOUND, "unknown tool".into())),
    }
}
