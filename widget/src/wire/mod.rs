//! What the server and the widget say to each other: the chat API's stream
//! events (assistant-api.md §3) and the conversation view. One definition,
//! used by both sides.

mod vocab;

use serde::{Deserialize, Serialize};
pub use vocab::{ActionStatus, EventKind, Role, StopReason, ToolStatus, UnknownWord, Verb};

/// A sanitized link card (remote-tools-contract.md, "Displayable results").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DisplayCard {
    pub title: String,
    pub url: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subtitle: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub badges: Vec<String>,
}

/// `turn`: always first.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TurnStarted {
    pub turn_id: String,
    pub conversation_id: String,
}

/// `text`: a piece of the assistant's reply as it streams.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TextDelta {
    pub delta: String,
}

/// `tool`: a tool call started, succeeded or failed.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ToolActivity {
    pub call_id: String,
    pub name: String,
    pub verb: Verb,
    pub status: ToolStatus,
}

/// `display`: sanitized cards from one tool result.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DisplayCards {
    pub call_id: String,
    pub cards: Vec<DisplayCard>,
}

/// `component`: a rich result the widget renders by `kind` (for example
/// the bistro's `menu_cart`); a kind the widget does not know is ignored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ComponentEvent {
    pub call_id: String,
    pub kind: String,
    /// The kind's own data, as the host sent it (the widget reads it as
    /// text only).
    pub data: serde_json::Value,
    /// For `POST /v1/components/{component_id}/call`: the component's own
    /// buttons call the tools it declared through it.
    pub component_id: String,
    /// True when this result refreshes the components of this kind already
    /// in the conversation instead of adding one.
    #[serde(default)]
    pub update: bool,
}

/// A component as the conversation view restores it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ComponentView {
    pub component_id: String,
    pub call_id: String,
    pub kind: String,
    pub data: serde_json::Value,
}

/// `POST /v1/components/{id}/call` body: one of the tools the component
/// declared, never a `delete`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ComponentCall {
    pub tool: String,
    #[serde(default)]
    pub arguments: serde_json::Value,
}

/// `POST /v1/components/{id}/call` answer: the component's new state, when
/// the tool's result carried one.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ComponentCallResult {
    pub component: Option<ComponentView>,
}

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
        self.cart.lines.iter().filter(|l| l.item == item).map(|l| l.quantity).sum()
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
            .sum()
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

/// `message`: the finished assistant message; `html` is sanitized.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FinishedMessage {
    pub message_id: String,
    pub text: String,
    pub html: String,
}

/// `done`: always last.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TurnDone {
    pub stop_reason: StopReason,
}

/// `error`: a generic message for the user; details stay in the server log.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TurnError {
    pub message: String,
    pub code: String,
}

/// `pending_action`: a change the host previewed, frozen until the user
/// applies it (after a second confirmation for a delete) or cancels it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PendingAction {
    pub action_id: String,
    pub tool: String,
    pub verb: Verb,
    /// The host's own summary, shown as plain text.
    pub preview: String,
    pub arguments: serde_json::Value,
    /// 1 for create/update; 2 for delete ([`Verb::confirmations_required`]).
    pub confirmations_required: u8,
    /// RFC 3339.
    pub expires_at: String,
    pub status: ActionStatus,
}

/// `POST /v1/chat/turns` body.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TurnRequest {
    pub conversation_id: Option<String>,
    pub message: String,
}

/// One message of `GET /v1/conversations/{id}`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ConversationMessage {
    pub id: String,
    /// `user` or `assistant`.
    pub role: Role,
    pub text: String,
    /// Sanitized HTML for assistant messages; absent for the user's own text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub html: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cards: Vec<DisplayCard>,
    /// Rich results shown with an assistant message, with their current data.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub components: Vec<ComponentView>,
    pub created_at: i64,
}

/// `GET /v1/conversations/{id}`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ConversationView {
    pub id: String,
    pub messages: Vec<ConversationMessage>,
    pub pending_action: Option<PendingAction>,
}

/// What the widget page tells the widget at boot (rendered by the server
/// into a `<meta name="ca-boot">` tag): nothing secret.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct WidgetBoot {
    pub workspace_id: String,
    /// Origins allowed to embed the widget and hand it a token.
    pub allowed_origins: Vec<String>,
    /// True when the built-in offline demo model answers.
    pub demo_model: bool,
    /// The assistant's display name.
    pub title: String,
    /// The host page's look, validated by the server.
    #[serde(default)]
    pub theme: Theme,
    /// The embed token, only for the full-page app launched from Caddie:
    /// there is no host page to hand one over.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    /// The Caddie host bar, when launched from Caddie.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caddie: Option<CaddieBar>,
}

/// What the Caddie host bar shows (caddie-tool-contract-ct1.md §6).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CaddieBar {
    pub project_name: String,
    pub stage_label: String,
    /// The hub's project page (`ret`), checked against the hub's origin.
    pub return_url: String,
    /// `?tour=1`: the guided introduction hands in here and back with `?tour=done`.
    #[serde(default)]
    pub tour: bool,
}

/// What a host may set of the widget's look (through the loader's `init`
/// options). Every value is validated before it reaches CSS.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Theme {
    /// `light` or `dark`; none follows `prefers-color-scheme`.
    pub mode: Option<String>,
    /// `#rrggbb`.
    pub accent: Option<String>,
    /// Corner radius in pixels, 0 to 32.
    pub radius: Option<u8>,
    /// A CSS font-family list of letters, digits, spaces, commas, quotes and hyphens.
    pub font: Option<String>,
}

impl Theme {
    /// Keeps only valid values.
    pub fn parse(mode: Option<&str>, accent: Option<&str>, radius: Option<&str>, font: Option<&str>) -> Self {
        let mode = mode.filter(|m| matches!(*m, "light" | "dark")).map(str::to_owned);
        let accent = accent
            .filter(|a| a.len() == 7 && a.starts_with('#') && a[1..].bytes().all(|b| b.is_ascii_hexdigit()))
            .map(str::to_owned);
        let radius = radius.and_then(|r| r.parse::<u8>().ok()).filter(|r| *r <= 32);
        let font = font
            .filter(|f| {
                (1..=120).contains(&f.len())
                    && f.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, ' ' | ',' | '"' | '\'' | '-'))
            })
            .map(str::to_owned);
        Self { mode, accent, radius, font }
    }

    /// The CSS custom properties this theme sets, for a `:root` rule.
    pub fn css(&self) -> String {
        let mut css = String::new();
        if let Some(accent) = &self.accent {
            css.push_str(&format!("--ca-accent:{accent};"));
        }
        if let Some(radius) = self.radius {
            css.push_str(&format!("--ca-radius:{radius}px;"));
        }
        if let Some(font) = &self.font {
            css.push_str(&format!("--ca-font:{font};"));
        }
        css
    }
}

#[cfg(test)]
mod tests {
    use super::{MenuCartData, Theme};

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

    #[test]
    fn only_valid_theme_values_reach_css() {
        let t = Theme::parse(Some("dark"), Some("#aa3300"), Some("8"), Some("Inter, sans-serif"));
        assert_eq!(t.css(), "--ca-accent:#aa3300;--ca-radius:8px;--ca-font:Inter, sans-serif;");
        let hostile = Theme::parse(
            Some("dark;x"),
            Some("red;}body{display:none"),
            Some("999"),
            Some("x;}</style><script>alert(1)</script>"),
        );
        assert_eq!(hostile, Theme::default());
        assert_eq!(hostile.css(), "");
    }
}
