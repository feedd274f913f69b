//! How a Caddie route fails, so handlers use `?`: an answer decided early
//! (a failure page, a redirect to sign in, a refusal), or an internal
//! error — logged once here, never shown. Pages for the browser's routes
//! ([`CaddieError`]); JSON for the hub's signed calls ([`HubError`]).

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::json;

use super::pages;

/// A browser route's failure.
#[derive(Debug)]
pub enum CaddieError {
    /// The answer to send: a failure page, a redirect, a JSON refusal.
    Answer(Response),
    /// Logged; the browser sees "Something went wrong".
    Internal(anyhow::Error),
}

impl From<anyhow::Error> for CaddieError {
    fn from(error: anyhow::Error) -> Self {
        CaddieError::Internal(error)
    }
}

impl From<Response> for CaddieError {
    fn from(answer: Response) -> Self {
        CaddieError::Answer(answer)
    }
}

impl IntoResponse for CaddieError {
    fn into_response(self) -> Response {
        match self {
            CaddieError::Answer(answer) => answer,
            CaddieError::Internal(error) => {
                tracing::error!(error = format!("{error:#}"), "caddie: request failed");
                pages::page(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "Something went wrong",
                    "<p>Please try again in a moment.</p>",
                )
            }
        }
    }
}

/// A hub call's failure, answered as `{"error", "code"}`.
#[derive(Debug)]
pub enum HubError {
    Refused {
        status: StatusCode,
        code: &'static str,
        message: String,
    },
    /// Logged; the hub sees a generic `500` and retries.
    Internal(anyhow::Error),
}

impl HubError {
    pub fn refused(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        HubError::Refused { status, code, message: message.into() }
    }

    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::refused(StatusCode::BAD_REQUEST, "bad_request", message)
    }
}

impl From<anyhow::Error> for HubError {
    fn from(error: anyhow::Error) -> Self {
        HubError::Internal(error)
    }
}

impl IntoResponse for HubError {
    fn into_response(self) -> Response {
        let (status, code, message) = match self {
            HubError::Refused { status, code, message } => (status, code, message),
            HubError::Internal(error) => {
                tracing::error!(error = format!("{error:#}"), "caddie: hub call failed");
                (StatusCode::INTERNAL_SERVER_ERROR, "internal", "internal error".to_owned())
            }
        };
        (status, Json(json!({ "error": message, "code": code }))).into_response()
    }
}
