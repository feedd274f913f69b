//! The HTTP vocabulary every edge shares (assistant-api.md): one error
//! type answered as a status and `{"error", "code"}`, a JSON body whose
//! rejection names the field at fault, and the bearer token of a request.

use axum::extract::rejection::JsonRejection;
use axum::extract::{FromRequest, Request};
use axum::http::request::Parts;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde::de::DeserializeOwned;

/// Every error the API answers: a status and `{"error", "code"}`.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("{0}")]
    BadRequest(String),
    #[error("a valid bearer token is required")]
    Unauthorized,
    #[error("{0}")]
    Forbidden(&'static str, String),
    #[error("not found")]
    NotFound,
    #[error("this method is not allowed here")]
    MethodNotAllowed,
    #[error("{1}")]
    BadGateway(&'static str, String),
    /// The resource is not in a state to do this (`409`).
    #[error("{1}")]
    Conflict(&'static str, String),
    /// A server the request named (an MCP server being connected) answered
    /// so that the request cannot be done: the status and code say how.
    #[error("{message}")]
    Upstream { status: StatusCode, code: &'static str, message: String },
    #[error("Too many requests right now. Try again in {} s.", .0.as_secs_f64().ceil().max(1.0))]
    TooManyRequests(std::time::Duration),
    /// The request cannot be done as it stands (`422`): the code says why.
    #[error("{1}")]
    Unprocessable(&'static str, String),
    /// The upload is larger than taken (`413`): the code says how.
    #[error("{1}")]
    TooLarge(&'static str, String),
    /// The upload is not of a type taken (`415`).
    #[error("{1}")]
    UnsupportedType(&'static str, String),
    /// A daily quota is used up (`429 quota_exceeded`): try again after it.
    #[error("Today's quota for this is used up. Try again in {} s.", .0.as_secs_f64().ceil().max(1.0))]
    QuotaExceeded(std::time::Duration),
    /// A turn of the conversation is still running.
    #[error("A reply is still being written in this conversation. Wait for it, or stop it.")]
    TurnInProgress,
    /// This process runs as many turns as it may.
    #[error("The assistant is busy. Try again in {} s.", .0.as_secs_f64().ceil().max(1.0))]
    Overloaded(std::time::Duration),
    /// A pending action that cannot move as asked: `409` or `410`, with the action.
    #[error("{message}")]
    Action { status: StatusCode, code: &'static str, message: &'static str, action: Box<widget::wire::PendingAction> },
    /// Logged where it is turned into a response; the client sees a generic line.
    #[error("internal error")]
    Internal(#[from] anyhow::Error),
}

impl ApiError {
    fn status_and_code(&self) -> (StatusCode, &'static str) {
        match self {
            ApiError::BadRequest(_) => (StatusCode::BAD_REQUEST, "bad_request"),
            ApiError::Unauthorized => (StatusCode::UNAUTHORIZED, "unauthorized"),
            ApiError::Forbidden(code, _) => (StatusCode::FORBIDDEN, code),
            ApiError::NotFound => (StatusCode::NOT_FOUND, "not_found"),
            ApiError::MethodNotAllowed => (StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed"),
            ApiError::BadGateway(code, _) => (StatusCode::BAD_GATEWAY, code),
            ApiError::Upstream { status, code, .. } => (*status, code),
            ApiError::Conflict(code, _) => (StatusCode::CONFLICT, code),
            ApiError::TooManyRequests(_) => (StatusCode::TOO_MANY_REQUESTS, "rate_limited"),
            ApiError::Unprocessable(code, _) => (StatusCode::UNPROCESSABLE_ENTITY, code),
            ApiError::TooLarge(code, _) => (StatusCode::PAYLOAD_TOO_LARGE, code),
            ApiError::UnsupportedType(code, _) => (StatusCode::UNSUPPORTED_MEDIA_TYPE, code),
            ApiError::QuotaExceeded(_) => (StatusCode::TOO_MANY_REQUESTS, "quota_exceeded"),
            ApiError::TurnInProgress => (StatusCode::CONFLICT, "turn_in_progress"),
            ApiError::Overloaded(_) => (StatusCode::SERVICE_UNAVAILABLE, "overloaded"),
            ApiError::Action { status, code, .. } => (*status, code),
            ApiError::Internal(_) => (StatusCode::INTERNAL_SERVER_ERROR, "internal"),
        }
    }
}

/// The body of every error answer.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ErrorBody {
    /// What went wrong, for a person.
    pub error: String,
    /// What went wrong, for a program: `bad_request`, `unauthorized`,
    /// `not_found`, `expired`, `already_applied`, …
    pub code: String,
    /// The action as it stands now, when an action could not move.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub action: Option<widget::wire::PendingAction>,
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let (status, code) = self.status_and_code();
        if let ApiError::Internal(cause) = &self {
            tracing::error!(error = format!("{cause:#}"), "request failed");
        }
        let error = self.to_string();
        let retry_after = match &self {
            ApiError::TooManyRequests(wait) | ApiError::Overloaded(wait) | ApiError::QuotaExceeded(wait) => {
                Some(wait.as_secs_f64().ceil().max(1.0) as u64)
            }
            _ => None,
        };
        let action = match self {
            ApiError::Action { action, .. } => Some(*action),
            _ => None,
        };
        let body = ErrorBody { error, code: code.to_owned(), action };
        let mut response = (status, axum::Json(body)).into_response();
        if let Some(seconds) = retry_after {
            response.headers_mut().insert(header::RETRY_AFTER, header::HeaderValue::from(seconds));
        }
        if status == StatusCode::UNAUTHORIZED {
            response.headers_mut().insert(header::WWW_AUTHENTICATE, header::HeaderValue::from_static("Bearer"));
        }
        response
    }
}

/// JSON object body whose rejection is a `400` naming the field at fault.
/// Only an object: serde would also read a struct from an array of its
/// fields in order, which no body of this API is.
pub struct ApiJson<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for ApiJson<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        if !is_json(req.headers()) {
            return Err(ApiError::BadRequest("the body must be JSON (Content-Type: application/json)".into()));
        }
        let bytes = axum::body::Bytes::from_request(req, state)
            .await
            .map_err(|rejection| ApiError::BadRequest(rejection.body_text()))?;
        if bytes.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
            return Err(ApiError::BadRequest("the body must be a JSON object".into()));
        }
        match axum::Json::<T>::from_bytes(&bytes) {
            Ok(axum::Json(value)) => Ok(ApiJson(value)),
            Err(rejection) => Err(ApiError::BadRequest(json_rejection_message(&rejection))),
        }
    }
}

/// A query string whose rejection is a `400` in the API's error shape.
pub struct ApiQuery<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> axum::extract::FromRequestParts<S> for ApiQuery<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut axum::http::request::Parts, state: &S) -> Result<Self, Self::Rejection> {
        axum::extract::Query::<T>::from_request_parts(parts, state)
            .await
            .map(|axum::extract::Query(value)| ApiQuery(value))
            .map_err(|rejection| ApiError::BadRequest(rejection.body_text()))
    }
}

/// `Content-Type: application/json`, or any `application/…+json`.
fn is_json(headers: &axum::http::HeaderMap) -> bool {
    let Some(value) = headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()) else { return false };
    let essence = value.split(';').next().unwrap_or("").trim().to_ascii_lowercase();
    essence == "application/json" || (essence.starts_with("application/") && essence.ends_with("+json"))
}

/// A field that must be a JSON object (or null or absent: `None`), read
/// as `T` — not from an array of its fields, as serde would.
pub fn object_only<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: DeserializeOwned,
{
    use serde::Deserialize;
    match Option::<serde_json::Map<String, serde_json::Value>>::deserialize(deserializer)? {
        Some(object) => {
            // Naming the field at fault inside the object, too.
            serde_path_to_error::deserialize(serde_json::Value::Object(object))
                .map(Some)
                .map_err(|e| serde::de::Error::custom(format!("{}: {}", e.path(), e.inner())))
        }
        None => Ok(None),
    }
}

/// A whole number from 0 as JSON Schema allows one (`60` or `60.0`), or
/// null/absent (`None`; with `#[serde(default)]`).
pub fn optional_whole<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Option<u64>, D::Error> {
    use serde::Deserialize;
    match Option::<serde_json::Number>::deserialize(deserializer)? {
        Some(number) => whole(&number)
            .map(Some)
            .ok_or_else(|| serde::de::Error::custom(format!("{number} is not a whole number from 0"))),
        None => Ok(None),
    }
}

/// `number` as a whole number from 0: an integer, or a float without a
/// fraction up to 2^53 (exact in an f64; beyond, no whole number we can trust).
pub fn whole(number: &serde_json::Number) -> Option<u64> {
    number.as_u64().or_else(|| {
        number.as_f64().filter(|f| f.fract() == 0.0 && (0.0..=9_007_199_254_740_992.0).contains(f)).map(|f| f as u64)
    })
}

fn json_rejection_message(rejection: &JsonRejection) -> String {
    match rejection {
        JsonRejection::MissingJsonContentType(_) => "the body must be JSON (Content-Type: application/json)".into(),
        // serde's message names the field: "missing field `message`", "invalid type: … at line 1 column 20".
        JsonRejection::JsonDataError(e) => format!(
            "invalid body: {}",
            e.body_text().trim_start_matches("Failed to deserialize the JSON body into the target type: ")
        ),
        JsonRejection::JsonSyntaxError(_) => "the body is not valid JSON".into(),
        other => other.body_text(),
    }
}

/// The bearer token of a request, if any.
pub fn bearer(parts: &Parts) -> Option<&str> {
    bearer_in(&parts.headers)
}

/// The bearer token of these headers, if any.
pub fn bearer_in(headers: &axum::http::HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim()).filter(|t| !t.is_empty())
}

/// A cookie's value from the request's `Cookie` headers.
pub fn cookie_value(headers: &axum::http::HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.to_owned())
}
