//! One way to call the chat API with the embed token, and the one error
//! type of the browser side: every caller gets a [`WidgetError`] and
//! handles an expired token the same way (`token::renew`).

use leptos::prelude::*;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use web_sys::{Headers, RequestInit, Response};

use crate::js;
use crate::state::Words;
use crate::wire::i18n::Msg;

/// Why a call or a turn did not go through.
#[derive(Debug, Clone)]
pub enum WidgetError {
    /// There is no token yet.
    NotConnected,
    /// `fetch` failed: offline, or the server is down.
    Unreachable,
    /// `401`: the token expired (a fresh one is asked for).
    Expired,
    /// The conversation asked for is gone (a turn answered `404`).
    ConversationGone,
    /// Another refusal: the status, the server's `{"error", "code"}`, the
    /// whole body (a refused action answer carries the action's current
    /// state) and, for `429` and `503`, the seconds of its `Retry-After`.
    Refused { status: u16, message: Option<String>, code: Option<String>, body: JsValue, retry_after: Option<u32> },
    /// A stream answer without a body.
    NoBody,
    /// The stream ended before its `done`.
    Lost,
    /// The turn's own `error` event: a message for the user.
    Turn(String),
}

impl WidgetError {
    /// What the user is told, in their language (a refusal's or a turn's
    /// own message comes from the server).
    pub fn message(&self, words: Words) -> String {
        let m = match self {
            WidgetError::NotConnected => Msg::NotConnected,
            WidgetError::Unreachable => Msg::Unreachable,
            WidgetError::Expired => Msg::SessionRenewing,
            WidgetError::ConversationGone => Msg::ConversationGone,
            // The server's "try again in N s" would be stale at once: the
            // chat counts down itself (`retry_after`).
            WidgetError::Refused { status: 429, retry_after: Some(_), .. } => Msg::TooMany,
            WidgetError::Refused { status: 503, retry_after: Some(_), .. } => Msg::Busy,
            // A host's or the model's failure, and a turn's own error: the
            // server writes them in the conversation's language.
            WidgetError::Refused { status: 502, message: Some(message), .. } | WidgetError::Turn(message) => {
                return message.clone();
            }
            WidgetError::Refused { code: Some(code), .. } if code == "turn_in_progress" => Msg::TurnInProgress,
            // Any other refusal's text is the API's, in English for the
            // developer: the visitor reads the chat's own words.
            WidgetError::Refused { .. } => Msg::WentWrong,
            WidgetError::NoBody => Msg::NoBody,
            WidgetError::Lost => Msg::Lost,
        };
        words.get(m)
    }

    /// The server's error code, when it refused.
    pub fn code(&self) -> Option<&str> {
        match self {
            WidgetError::Refused { code, .. } => code.as_deref(),
            _ => None,
        }
    }

    /// Seconds to wait before asking again, when the server said so.
    pub fn retry_after(&self) -> Option<u32> {
        match self {
            WidgetError::Refused { retry_after, .. } => *retry_after,
            _ => None,
        }
    }

    /// True for a `404`.
    pub fn is_not_found(&self) -> bool {
        matches!(self, WidgetError::Refused { status: 404, .. })
    }
}

/// Calls the chat API with the embed token. A `2xx` answer is `Ok`; every
/// other outcome is the matching [`WidgetError`].
pub async fn call(method: &str, path: &str, token: &str, body: Option<String>) -> Result<Response, WidgetError> {
    let response = send(method, path, Some(token), body).await.map_err(|_| WidgetError::Unreachable)?;
    answer(response).await
}

/// A `2xx` answer, or the matching [`WidgetError`].
async fn answer(response: Response) -> Result<Response, WidgetError> {
    match response.status() {
        200..=299 => Ok(response),
        401 => Err(WidgetError::Expired),
        status => {
            // Seconds only: the server never sends an HTTP date here.
            let retry_after = response.headers().get("retry-after").ok().flatten().and_then(|v| v.trim().parse().ok());
            let body = js::parse(&text_of(&response).await.unwrap_or_default());
            let (message, code) = (js::string(&body, "error"), js::string(&body, "code"));
            Err(WidgetError::Refused { status, message, code, body, retry_after })
        }
    }
}

/// [`call`] with one more header: `Last-Event-ID` to resume a stream,
/// `Idempotency-Key` to send a message.
pub async fn call_with(
    method: &str,
    path: &str,
    token: &str,
    body: Option<String>,
    header: Option<(&str, &str)>,
) -> Result<Response, WidgetError> {
    let response = send_with(method, path, Some(token), body, header).await.map_err(|_| WidgetError::Unreachable)?;
    answer(response).await
}

/// `fetch` of a same-origin path; with a bearer token when given.
pub async fn send(method: &str, path: &str, token: Option<&str>, body: Option<String>) -> Result<Response, JsValue> {
    send_with(method, path, token, body, None).await
}

async fn send_with(
    method: &str,
    path: &str,
    token: Option<&str>,
    body: Option<String>,
    header: Option<(&str, &str)>,
) -> Result<Response, JsValue> {
    let headers = Headers::new()?;
    if let Some((name, value)) = header {
        headers.set(name, value)?;
    }
    if let Some(token) = token {
        headers.set("Authorization", &format!("Bearer {token}"))?;
    }
    let init = RequestInit::new();
    init.set_method(method);
    if let Some(body) = body {
        headers.set("Content-Type", "application/json")?;
        init.set_body(&JsValue::from_str(&body));
    }
    init.set_headers(&headers);
    let request = web_sys::Request::new_with_str_and_init(path, &init)?;
    let response = JsFuture::from(window().fetch_with_request(&request)).await?;
    response.dyn_into::<Response>()
}

/// The answer's body as text.
pub async fn text_of(response: &Response) -> Result<String, JsValue> {
    JsFuture::from(response.text()?).await?.as_string().ok_or_else(|| JsValue::from_str("not text"))
}

/// The answer's body as a JSON value (`undefined` when it is not JSON).
pub async fn json_of(response: &Response) -> JsValue {
    js::parse(&text_of(response).await.unwrap_or_default())
}
