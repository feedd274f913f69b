//! A diner's cart: the lines are stored in the database (`db::carts`); the
//! prices and totals come from the bistro's own menu, never from a client.

use super::menu::{MENU, MenuItem};
pub use crate::db::carts::{CartLine, add, clear, lines, remove_one, set_notes};

/// The menu's dish for a line, if it is still on the menu.
pub fn menu_item(line: &CartLine) -> Option<&'static MenuItem> {
    MENU.iter().find(|m| m.id == line.item)
}

/// Whole dollars, from the server's own price.
pub fn line_total(line: &CartLine) -> i64 {
    menu_item(line).map_or(0, |m| i64::from(m.price) * line.quantity)
}

pub fn subtotal(lines: &[CartLine]) -> i64 {
    lines.iter().map(line_total).sum()
}
