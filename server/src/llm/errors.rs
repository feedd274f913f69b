//! How a model call fails, read from what providers answer: the status,
//! `Retry-After`, and the error body (OpenAI's `{"error": {"code",
//! "message"}}` and the many bodies that only resemble it).

use std::time::Duration;

use serde_json::Value;

/// Longest error body read, in bytes.
pub const MAX_ERROR_BYTES: usize = 64 * 1024;
/// Longest stream read for one step, in bytes.
pub const MAX_STREAM_BYTES: usize = 16 * 1024 * 1024;

/// The model failed; `Display` is for logs (never a key), the user sees
/// [`ModelError::user_message`].
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    #[error("the model is rate limited (429)")]
    RateLimited { retry_after: Option<Duration> },
    #[error("the model is unavailable ({status})")]
    Unavailable { status: u16, retry_after: Option<Duration> },
    #[error("the model cannot be reached: {0}")]
    Unreachable(String),
    #[error("the prompt is longer than the model's context")]
    ContextLength,
    #[error("the model refused the request ({status}): {message}")]
    Rejected { status: u16, message: String },
    #[error("the model's answer is broken: {0}")]
    Broken(String),
}

impl ModelError {
    /// From an error status and its body.
    pub fn from_status(status: u16, retry_after: Option<Duration>, body: &str) -> Self {
        let parsed: Option<Value> = serde_json::from_str(body).ok();
        let error = parsed.as_ref().map(|v| v.get("error").unwrap_or(v));
        match (status, error) {
            (429, _) => ModelError::RateLimited { retry_after },
            (500..=599, _) => ModelError::Unavailable { status, retry_after },
            (_, Some(error)) => ModelError::from_error_body(Some(status), error),
            _ => classify(status, &body.chars().take(300).collect::<String>()),
        }
    }

    /// From an error object (in an error answer, or in the stream).
    pub fn from_error_body(status: Option<u16>, error: &Value) -> Self {
        let text = |key: &str| error.get(key).and_then(Value::as_str).unwrap_or("").to_owned();
        let message = match error {
            Value::String(s) => s.clone(),
            _ => text("message"),
        };
        let code = format!("{} {} {}", text("code"), text("type"), text("status"));
        if code.contains("rate_limit") || code.contains("RESOURCE_EXHAUSTED") {
            return ModelError::RateLimited { retry_after: None };
        }
        if code.contains("context_length") || mentions_context_length(&message) {
            return ModelError::ContextLength;
        }
        classify(status.unwrap_or(0), &message.chars().take(300).collect::<String>())
    }

    /// Worth another attempt (before the first token).
    pub fn is_retryable(&self) -> bool {
        matches!(self, ModelError::RateLimited { .. } | ModelError::Unavailable { .. } | ModelError::Unreachable(_))
    }

    /// What the provider asked us to wait.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            ModelError::RateLimited { retry_after } | ModelError::Unavailable { retry_after, .. } => *retry_after,
            _ => None,
        }
    }

    /// What the user is told.
    pub fn user_message(&self) -> String {
        self.told_in("en")
    }

    /// What the user is told, in `lang`.
    pub fn told_in(&self, lang: &str) -> String {
        widget::wire::i18n::text(lang, self.message_key())
    }

    /// The catalogue's key of what the user is told (`widget/i18n`).
    pub fn message_key(&self) -> &'static str {
        match self {
            ModelError::RateLimited { .. } => "error_model_busy",
            ModelError::Unavailable { .. } | ModelError::Unreachable(_) => "error_model_unavailable",
            ModelError::ContextLength => "error_model_too_long",
            ModelError::Rejected { .. } | ModelError::Broken(_) => "error_model_failed",
        }
    }

    /// The `code` of the turn's `error` event.
    pub fn code(&self) -> &'static str {
        match self {
            ModelError::RateLimited { .. } => "model_rate_limited",
            ModelError::Unavailable { .. } | ModelError::Unreachable(_) => "model_unavailable",
            ModelError::ContextLength => "model_context_length",
            ModelError::Rejected { .. } => "model_rejected",
            ModelError::Broken(_) => "model_failed",
        }
    }
}

fn classify(status: u16, message: &str) -> ModelError {
    if mentions_context_length(message) {
        ModelError::ContextLength
    } else {
        ModelError::Rejected { status, message: message.to_owned() }
    }
}

/// The phrasings of "the prompt is too long" across providers.
fn mentions_context_length(message: &str) -> bool {
    let m = message.to_ascii_lowercase();
    [
        "context length",
        "context_length",
        "context window",
        "maximum context",
        "prompt is too long",
        "too many tokens",
        "input is too long",
        "reduce the length",
        "exceeds the available context",
        "token limit",
    ]
    .iter()
    .any(|phrase| m.contains(phrase))
}

/// A server that does not know `stream_options` says so in its refusal.
pub fn mentions_stream_options(message: &str) -> bool {
    let m = message.to_ascii_lowercase();
    m.contains("stream_options") || m.contains("include_usage")
}

/// `Retry-After` in seconds, or an HTTP date.
pub fn parse_retry_after(value: &reqwest::header::HeaderValue) -> Option<Duration> {
    let text = value.to_str().ok()?.trim();
    if let Ok(seconds) = text.parse::<f64>() {
        return (seconds.is_finite() && seconds >= 0.0).then(|| Duration::from_secs_f64(seconds.min(86_400.0)));
    }
    let at = httpdate::parse_http_date(text).ok()?;
    Some(at.duration_since(std::time::SystemTime::now()).unwrap_or(Duration::ZERO))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn provider_errors_are_classified() {
        let openai = r#"{"error": {"message": "This model's maximum context length is 8192 tokens.", "type": "invalid_request_error", "code": "context_length_exceeded"}}"#;
        assert!(matches!(ModelError::from_status(400, None, openai), ModelError::ContextLength));
        let ollama = r#"{"error": "prompt is too long for the context window"}"#;
        assert!(matches!(ModelError::from_status(400, None, ollama), ModelError::ContextLength));
        let gemini = r#"[{"error": {"code": 429, "status": "RESOURCE_EXHAUSTED"}}]"#;
        assert!(matches!(ModelError::from_status(429, None, gemini), ModelError::RateLimited { .. }));
        let vllm = r#"{"object": "error", "message": "Unrecognized request argument: stream_options", "code": 400}"#;
        let ModelError::Rejected { message, .. } = ModelError::from_status(400, None, vllm) else { panic!() };
        assert!(mentions_stream_options(&message));
        assert!(matches!(ModelError::from_status(503, None, "<html>"), ModelError::Unavailable { status: 503, .. }));
        assert!(matches!(ModelError::from_status(401, None, "nope"), ModelError::Rejected { status: 401, .. }));
    }

    #[test]
    fn retry_after_reads_seconds_and_dates() {
        let value = |v: &str| reqwest::header::HeaderValue::from_str(v).unwrap();
        assert_eq!(parse_retry_after(&value("2")), Some(Duration::from_secs(2)));
        assert_eq!(parse_retry_after(&value("0.5")), Some(Duration::from_millis(500)));
        assert_eq!(parse_retry_after(&value("Wed, 21 Oct 2015 07:28:00 GMT")), Some(Duration::ZERO));
        assert_eq!(parse_retry_after(&value("soon")), None);
    }
}
