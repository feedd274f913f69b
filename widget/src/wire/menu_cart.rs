//! The bistro's `menu_cart` component data (acme-bistro-api-contract.md
//! §1 items, plus the diner's server-side cart), and what the widget
//! computes from it for display.

use serde::{Deserialize, Serialize};

/// The bistro's `menu_cart` data (acme-bistro-api-contract.md §1 items,
/// plus the diner's server-side cart).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MenuCartData {
    pub items: Vec<MenuCartItem>,
    #[serde(default)]
    pub cart: MenuCartCart,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MenuCartItem {
    pub id: String,
    pub name: String,
    /// Whole US dollars.
    pub price: u32,
    pub kind: String,
    #[serde(default = "yes")]
    pub available: bool,
}

fn yes() -> bool {
    true
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MenuCartCart {
    #[serde(default)]
    pub lines: Vec<MenuCartLine>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MenuCartLine {
    pub item: String,
    pub quantity: u32,
    #[serde(default)]
    pub notes: String,
}

impl MenuCartData {
    /// How many of `item` the cart holds.
    pub fn quantity(&self, item: &str) -> u32 {
        // A host's numbers: a sum past the type's end stops there rather than wrap.
        self.cart.lines.iter().filter(|l| l.item == item).fold(0, |n, l| n.saturating_add(l.quantity))
    }

    /// The line's notes for `item`, if it is in the cart.
    pub fn notes(&self, item: &str) -> String {
        self.cart.lines.iter().find(|l| l.item == item).map(|l| l.notes.clone()).unwrap_or_default()
    }

    /// The running total the widget shows, from the menu's prices: for
    /// display only — the bistro recomputes the amount it charges.
    pub fn display_total(&self) -> u64 {
        self.cart
            .lines
            .iter()
            .filter_map(|l| {
                self.items.iter().find(|i| i.id == l.item).map(|i| u64::from(i.price) * u64::from(l.quantity))
            })
            .fold(0, u64::saturating_add)
    }

    /// The kinds in menu order, each with its dishes.
    pub fn groups(&self) -> Vec<(String, Vec<MenuCartItem>)> {
        let mut groups: Vec<(String, Vec<MenuCartItem>)> = Vec::new();
        for item in &self.items {
            match groups.iter_mut().find(|(k, _)| *k == item.kind) {
                Some((_, items)) => items.push(item.clone()),
                None => groups.push((item.kind.clone(), vec![item.clone()])),
            }
        }
        groups
    }
}

#[cfg(test)]
mod tests {
    use super::MenuCartData;

    #[test]
    fn huge_quantities_from_a_host_stop_at_the_top_instead_of_wrapping() {
        let data: MenuCartData = serde_json::from_value(serde_json::json!({
            "items": [{"id": "a", "name": "A", "price": u32::MAX, "kind": "Mains"}],
            "cart": {"lines": [{"item": "a", "quantity": u32::MAX}, {"item": "a", "quantity": u32::MAX},
                               {"item": "a", "quantity": 7}]},
        }))
        .unwrap();
        assert_eq!(data.quantity("a"), u32::MAX);
        assert_eq!(data.display_total(), u64::MAX);
    }

    #[test]
    fn the_menu_cart_groups_by_kind_and_totals_for_display() {
        let data: MenuCartData = serde_json::from_value(serde_json::json!({
            "items": [
                {"id": "a", "name": "A", "price": 14, "kind": "Mains"},
                {"id": "s", "name": "S", "price": 11, "kind": "Starters", "available": false},
                {"id": "b", "name": "B", "price": 13, "kind": "Mains"},
            ],
            "cart": {"lines": [{"item": "a", "quantity": 2, "notes": "no basil"}, {"item": "b", "quantity": 1},
                               {"item": "gone", "quantity": 5}], "subtotal": 999},
        }))
        .unwrap();
        let groups = data.groups();
        assert_eq!(
            groups.iter().map(|(k, i)| (k.as_str(), i.len())).collect::<Vec<_>>(),
            [("Mains", 2), ("Starters", 1)]
        );
        assert!(!groups[1].1[0].available);
        assert_eq!(data.quantity("a"), 2);
        assert_eq!(data.notes("a"), "no basil");
        assert_eq!(data.quantity("s"), 0);
        // From the menu's prices; a line for a dish not on the menu adds nothing.
        assert_eq!(data.display_total(), 41);
    }
}
