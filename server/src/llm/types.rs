//! What a model step is given and gives back.

use serde::{Deserialize, Serialize};

/// One message of the transcript the model sees.
#[derive(Clone, Debug)]
pub enum ChatMessage {
    System(String),
    User(String),
    /// A user message with images, for a model that accepts them: the
    /// text (which also names each image), then the images.
    UserWithImages {
        text: String,
        images: Vec<Image>,
    },
    Assistant {
        text: String,
        tool_calls: Vec<ToolCall>,
    },
    Tool {
        call_id: String,
        content: String,
    },
}

impl ChatMessage {
    /// True for a user's message, with images or without.
    pub fn is_user(&self) -> bool {
        matches!(self, ChatMessage::User(_) | ChatMessage::UserWithImages { .. })
    }
}

/// An image as a model is given it: small enough for a vision model's
/// input (its longest side bounded), as a `data:` URL's parts.
#[derive(Clone, PartialEq, Eq)]
pub struct Image {
    pub media_type: &'static str,
    pub base64: String,
}

impl std::fmt::Debug for Image {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Image({}, {} base64 chars)", self.media_type, self.base64.len())
    }
}

/// A tool call as the model made it: `arguments` is the model's raw JSON
/// text; `extra` the provider's own fields on the call (Gemini's
/// `extra_content.google.thought_signature`), sent back with it unchanged.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub arguments: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extra: Option<serde_json::Map<String, serde_json::Value>>,
}

/// Why the model stopped a step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Finish {
    Stop,
    ToolCalls,
    /// Out of output tokens.
    Length,
    /// The provider's content filter cut the answer.
    ContentFilter,
    Other,
}

impl Finish {
    pub(crate) fn parse(word: &str) -> Self {
        match word {
            "stop" | "end_turn" | "eos" => Finish::Stop,
            "tool_calls" | "function_call" | "tool_use" => Finish::ToolCalls,
            "length" | "max_tokens" => Finish::Length,
            "content_filter" | "safety" | "recitation" => Finish::ContentFilter,
            _ => Finish::Other,
        }
    }
}

/// What one model step produced.
#[derive(Debug, Default)]
pub struct StepOutput {
    pub text: String,
    pub tool_calls: Vec<ToolCall>,
    /// Tokens used, from the provider's usage or estimated when it sends none.
    pub tokens: u64,
    /// Of `tokens`, those sent (the prompt) and those received (the answer).
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// `None` when the stream ended without saying.
    pub finish: Option<Finish>,
}
