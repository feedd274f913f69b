//! The bistro's menu (acme-bistro-api-contract.md §1), its settings, and
//! what its tools show: the `show_menu` output and the `menu_cart` component.

use std::sync::Arc;

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
    /// Dishes always sold out (`CA_BISTRO_SOLD_OUT`); the kitchen marks
    /// others at run time (`PUT /bistro/api/kitchen/{item}`).
    pub sold_out: Vec<String>,
}

/// What the kitchen can serve now: a snapshot, read once per request.
#[derive(Debug, Clone, Default)]
pub struct Stock {
    sold_out: Vec<String>,
}

impl Stock {
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

impl BistroState {
    /// The dishes sold out now: the configured ones and the kitchen's.
    pub async fn stock(&self) -> anyhow::Result<Stock> {
        let mut sold_out = self.bistro.sold_out.clone();
        sold_out.extend(crate::db::kitchen::sold_out(&self.pool).await?);
        Ok(Stock { sold_out })
    }
}

/// The diner's name from a tool's arguments (`Guest` when none is given).
pub fn customer(arguments: &Value) -> String {
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
pub fn menu_cart(stock: &Stock, cart: Value, update: bool) -> Value {
    json!({
        "kind": "menu_cart",
        "data": { "items": menu_items(stock), "cart": cart },
        "tools": MENU_CART_TOOLS,
        "update": update,
    })
}

pub fn menu_items(stock: &Stock) -> Vec<Value> {
    MENU.iter()
        .map(|i| json!({ "id": i.id, "name": i.name, "price": i.price, "kind": i.kind, "available": stock.is_available(i.id) }))
        .collect()
}

/// `show_menu`'s output: the contract's fields, `display` cards and the
/// `menu_cart` component.
pub fn show_menu(bistro: &Bistro, stock: &Stock, customer: &str, cart: Value) -> Value {
    let items = menu_items(stock);
    let display: Vec<Value> = MENU
        .iter()
        .map(|i| {
            json!({
                "title": i.name,
                "url": format!("{}/bistro/menu#{}", bistro.public_url, i.id),
                "subtitle": if stock.is_available(i.id) {
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
        "component": menu_cart(stock, cart.clone(), false),
        "cart": cart,
        "display": display,
    })
}
