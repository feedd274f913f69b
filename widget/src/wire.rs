//! What the server and the widget say to each other: the chat API's stream
//! events (assistant-api.md §3) and the conversation view. One definition,
//! used by both sides.

use serde::{Deserialize, Serialize};

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
    pub verb: String,
    pub status: String,
}

/// `display`: sanitized cards from one tool result.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DisplayCards {
    pub call_id: String,
    pub cards: Vec<DisplayCard>,
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
    pub stop_reason: String,
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
    pub verb: String,
    /// The host's own summary, shown as plain text.
    pub preview: String,
    pub arguments: serde_json::Value,
    /// 1 for create/update; 2 for delete.
    pub confirmations_required: u8,
    /// RFC 3339.
    pub expires_at: String,
    /// `pending`, `confirmed_once`, `executing`, `succeeded`, `failed`, `cancelled` or `expired`.
    pub status: String,
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
    pub role: String,
    pub text: String,
    /// Sanitized HTML for assistant messages; absent for the user's own text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub html: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cards: Vec<DisplayCard>,
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
    use super::Theme;

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
