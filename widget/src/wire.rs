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
}
