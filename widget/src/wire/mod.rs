//! What the server and the widget say to each other: the chat API's stream
//! events (assistant-api.md §3) and the conversation view. One definition,
//! used by both sides.

mod boot;
pub mod i18n;
mod menu_cart;
mod vocab;

pub use boot::{CaddieBar, StartScreen, Theme, Welcome, WidgetBoot};
pub use menu_cart::{MenuCartCart, MenuCartData, MenuCartItem, MenuCartLine};
use serde::{Deserialize, Serialize};
pub use vocab::{
    ActionStatus, ElicitAction, EventKind, FieldKind, Rating, Role, StopReason, ToolStatus, UnknownWord, Verb,
};

/// A sanitized link card (remote-tools-contract.md, "Displayable results").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
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
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct TurnStarted {
    pub turn_id: String,
    pub conversation_id: String,
}

/// `text`: a piece of the assistant's reply as it streams.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct TextDelta {
    pub delta: String,
}

/// `tool`: a tool call started, made progress, succeeded or failed.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct ToolActivity {
    pub call_id: String,
    pub name: String,
    pub verb: Verb,
    pub status: ToolStatus,
    /// `progress`: how far the tool is (its own unit, growing), of `total`
    /// when it knows, and what it says it is doing (plain text, 200
    /// characters at most).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progress: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// `elicitation`: a tool asks the user for input while it runs (an MCP
/// server's form). The form's fields are read from the server's schema
/// (the spec's flat subset); the answer goes to
/// `POST /v1/elicitations/{elicitation_id}`, and the tool waits for it
/// within the turn's time limit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct ElicitationRequest {
    pub elicitation_id: String,
    pub call_id: String,
    /// The tool that asks.
    pub name: String,
    /// What the tool asks, in its own words (plain text).
    pub message: String,
    pub fields: Vec<ElicitationField>,
    /// The form as the widget shows it, in the visitor's language: markup
    /// drawn by the server, every text from the tool escaped.
    pub html: String,
}

/// One field of a tool's form.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct ElicitationField {
    /// The key of the answer's `content`.
    pub name: String,
    /// What the field is called (its title, else its name).
    pub label: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub kind: FieldKind,
    pub required: bool,
    /// A text's format: `email`, `uri`, `date` or `date-time`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<String>,
    /// A choice's options (one of them; any of them for `choices`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub options: Vec<FieldOption>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub minimum: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub maximum: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_length: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_length: Option<u64>,
    /// How many of `choices`' options may be chosen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_items: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_items: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<serde_json::Value>,
}

/// One option of a choice: the value sent, and what the user reads.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct FieldOption {
    pub value: String,
    pub label: String,
}

/// `POST /v1/elicitations/{id}` body: the user's answer.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct ElicitationAnswer {
    pub action: ElicitAction,
    /// With `accept`: the form's values by field name.
    #[serde(default)]
    pub content: Option<serde_json::Map<String, serde_json::Value>>,
}

/// `display`: sanitized cards from one tool result.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct DisplayCards {
    pub call_id: String,
    pub cards: Vec<DisplayCard>,
}

/// `component`: a rich result the widget renders by `kind` (for example
/// the bistro's `menu_cart`); a kind the widget does not know is ignored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
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
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct ComponentView {
    pub component_id: String,
    pub call_id: String,
    pub kind: String,
    pub data: serde_json::Value,
}

/// `POST /v1/components/{id}/call` body: one of the tools the component
/// declared, never a `delete`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct ComponentCall {
    pub tool: String,
    #[serde(default)]
    pub arguments: serde_json::Value,
}

/// `POST /v1/components/{id}/call` answer: the component's new state, when
/// the tool's result carried one.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct ComponentCallResult {
    pub component: Option<ComponentView>,
}

/// `message`: the finished assistant message; `html` is sanitized.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct FinishedMessage {
    pub message_id: String,
    pub text: String,
    pub html: String,
}

/// `done`: always last.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct TurnDone {
    pub stop_reason: StopReason,
    /// The pages the reply cites, from this turn's knowledge searches
    /// (absent when it cites none). The widget shows them in the
    /// message's `html`, so only the server's build has the field.
    #[cfg(feature = "ssr")]
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sources: Vec<CitedSource>,
}

/// A page a reply cites (issue #45): only one a knowledge search of its
/// turn returned.
#[cfg(feature = "ssr")]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct CitedSource {
    /// The page, with the section's `#fragment`; empty for a snippet or a
    /// file without an address (shown by its title alone).
    pub url: String,
    pub title: String,
    pub section: String,
}

/// `error`: a generic message for the user; details stay in the server log.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct TurnError {
    pub message: String,
    pub code: String,
}

/// `pending_action`: a change the host previewed, frozen until the user
/// applies it (after a second confirmation for a delete) or cancels it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct PendingAction {
    pub action_id: String,
    pub tool: String,
    pub verb: Verb,
    /// The host's own summary, shown as plain text.
    pub preview: String,
    /// Not in the widget's WASM: it shows the preview, never the arguments,
    /// and a JSON value's clone and drop code weigh on its budget.
    #[cfg(any(feature = "ssr", not(feature = "hydrate")))]
    pub arguments: serde_json::Value,
    /// 1 for create/update; 2 for delete ([`Verb::confirmations_required`]).
    pub confirmations_required: u8,
    /// RFC 3339.
    pub expires_at: String,
    pub status: ActionStatus,
    /// The action this one replaces: that one went `stale` at the host
    /// after its preview, and this is the fresh preview of the same
    /// arguments (our extension; absent otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replaces: Option<String>,
}

/// `POST /v1/chat/turns` body.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct TurnRequest {
    /// Absent or null: a new conversation.
    pub conversation_id: Option<String>,
    /// What the user wrote, at most 8000 characters: not only whitespace,
    /// unless the message carries `attachment_ids` (a photo may go alone;
    /// a message with neither is `400`).
    #[cfg_attr(feature = "ssr", schema(max_length = 8000))]
    pub message: String,
    /// The language the user reads (a BCP 47 tag such as `es` or
    /// `es-MX`): when the widget speaks it (`en`, `es`, `fr`, `de`, `ja`,
    /// `ar`), the model is told to reply in it and the conversation keeps
    /// it for later turns. Another is ignored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ssr", schema(max_length = 35))]
    pub lang: Option<String>,
    /// Files the user attached to this message (`POST /v1/attachments`),
    /// in order: at most 8, each the caller's own (another's is `404`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[cfg_attr(feature = "ssr", schema(max_items = 8))]
    pub attachment_ids: Vec<String>,
}

/// An attachment as a message shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct AttachmentRef {
    pub id: String,
    pub name: String,
    /// As sniffed from its bytes (`image/png`, `application/pdf`, …).
    pub media_type: String,
    /// Bytes, as kept.
    pub size: u64,
    /// Where its owner's browser reads it (`<img src>`, a download)
    /// without a token: a signed link of `GET /v1/attachments/{id}/content`,
    /// valid for `CA_ATTACHMENT_LINK_SECS` from when the conversation was read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}

/// One message of `GET /v1/conversations/{id}`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct ConversationMessage {
    pub id: String,
    /// `user` or `assistant`.
    pub role: Role,
    pub text: String,
    /// Sanitized HTML for assistant messages; for a user's message with
    /// attachments (`GET /v1/conversations/{id}`), its text and files as
    /// the widget shows them; absent for the user's own text alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub html: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cards: Vec<DisplayCard>,
    /// Rich results shown with an assistant message, with their current data.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub components: Vec<ComponentView>,
    pub created_at: i64,
    /// The user's thumbs up or down on this reply, if they gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub feedback: Option<Feedback>,
    /// The files the user sent with this message, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attachments: Vec<AttachmentRef>,
    /// The pages a reply cites (also drawn in its `html`).
    #[cfg(feature = "ssr")]
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sources: Vec<CitedSource>,
}

/// A user's feedback on a reply.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct Feedback {
    pub rating: Rating,
    /// What the user added, if anything.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
}

/// `GET /v1/conversations/{id}`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct ConversationView {
    pub id: String,
    pub messages: Vec<ConversationMessage>,
    pub pending_action: Option<PendingAction>,
}
