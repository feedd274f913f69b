//! The HTTP under async-openai: our own reqwest client (one TLS stack for
//! every outbound call, its timeouts and, for a workspace's own model, the
//! resolver that reaches public addresses only), installed with
//! `Client::with_http_service`. It adds what async-openai leaves out:
//!
//! - An answer that is not 2xx becomes our [`ModelError`] here, with its
//!   status and `Retry-After`. async-openai reads such an answer itself
//!   but drops its headers, and loses the status of bodies that are not
//!   OpenAI's `{"error": …}` (Gemini's list, vLLM's flat object, a proxy's
//!   HTML); its default stack would also retry on its own, without a cap
//!   on the wait. A failed connection is [`ModelError::Unreachable`].
//! - The stream is capped at [`MAX_STREAM_BYTES`]: async-openai reads it
//!   into an unbounded channel as fast as the network delivers.
//! - A server that ignores `stream: true` and answers one JSON completion
//!   is handed on as a stream of that one event.

use async_openai::error::OpenAIError;
use async_openai::middleware::HttpRequestFactory;
use axum::http;
use futures::StreamExt;
use reqwest::header::{CONTENT_TYPE, RETRY_AFTER};

use super::errors::{self, MAX_ERROR_BYTES, MAX_STREAM_BYTES, ModelError};

/// `client` sending through `http`.
pub fn install<C: async_openai::config::Config>(
    client: async_openai::Client<C>,
    http: reqwest::Client,
) -> async_openai::Client<C> {
    client.with_http_service(tower::service_fn(move |request: HttpRequestFactory| send(http.clone(), request)))
}

async fn send(http: reqwest::Client, request: HttpRequestFactory) -> Result<reqwest::Response, OpenAIError> {
    let request = request.build().await?;
    let response =
        http.execute(request).await.map_err(|e| boxed(ModelError::Unreachable(crate::host::error_chain(&e))))?;
    let status = response.status();
    if !status.is_success() {
        let retry_after = response.headers().get(RETRY_AFTER).and_then(errors::parse_retry_after);
        let (body, _) = read_up_to(response, MAX_ERROR_BYTES).await;
        return Err(boxed(ModelError::from_status(status.as_u16(), retry_after, &String::from_utf8_lossy(&body))));
    }
    let json = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if json {
        let (body, whole) = read_up_to(response, MAX_STREAM_BYTES).await;
        if !whole {
            return Err(boxed(ModelError::Broken("the model's answer is too long".into())));
        }
        let completion: serde_json::Value = serde_json::from_slice(&body)
            .map_err(|_| boxed(ModelError::Broken("the model's answer is not JSON".into())))?;
        // Written compact, the completion is one `data:` line.
        let event = format!("data: {completion}\n\n");
        return Ok(event_stream(status, reqwest::Body::from(event)));
    }
    let mut received = 0usize;
    let capped = response.bytes_stream().map(move |chunk| {
        let chunk = chunk.map_err(|e| std::io::Error::other(crate::host::error_chain(&e)))?;
        received += chunk.len();
        if received > MAX_STREAM_BYTES {
            return Err(std::io::Error::other("the model's answer is too long"));
        }
        Ok::<_, std::io::Error>(chunk)
    });
    Ok(event_stream(status, reqwest::Body::wrap_stream(capped)))
}

fn event_stream(status: reqwest::StatusCode, body: reqwest::Body) -> reqwest::Response {
    let mut response = http::Response::new(body);
    *response.status_mut() = status;
    response.headers_mut().insert(CONTENT_TYPE, http::HeaderValue::from_static("text/event-stream"));
    reqwest::Response::from(response)
}

fn boxed(error: ModelError) -> OpenAIError {
    OpenAIError::Boxed(Box::new(error))
}

/// At most `limit` bytes of the body, and whether that was all of it.
async fn read_up_to(mut response: reqwest::Response, limit: usize) -> (Vec<u8>, bool) {
    let mut body = Vec::new();
    loop {
        match response.chunk().await {
            Ok(Some(chunk)) => {
                body.extend_from_slice(&chunk);
                if body.len() > limit {
                    body.truncate(limit);
                    return (body, false);
                }
            }
            Ok(None) => return (body, true),
            Err(_) => return (body, false),
        }
    }
}

/// What async-openai's error means for the step.
pub fn model_error(error: OpenAIError) -> ModelError {
    match error {
        OpenAIError::Boxed(inner) => match inner.downcast::<ModelError>() {
            Ok(ours) => *ours,
            Err(other) => ModelError::Broken(other.to_string()),
        },
        OpenAIError::Reqwest(e) if e.is_builder() => ModelError::Broken(crate::host::error_chain(&e)),
        OpenAIError::Reqwest(e) => ModelError::Unreachable(crate::host::error_chain(&e)),
        OpenAIError::ApiError(e) => ModelError::from_status(e.status_code.as_u16(), None, &e.api_error.message),
        // Never the event itself: it is the model's text.
        OpenAIError::JSONDeserialize(..) => ModelError::Broken("the model sent a stream event that is not JSON".into()),
        OpenAIError::StreamError(e) => match *e {
            async_openai::error::StreamError::EventStream(cause) => {
                ModelError::Broken(format!("the stream broke: {cause}"))
            }
            async_openai::error::StreamError::UnknownEvent(_) => {
                ModelError::Broken("the model sent an event we do not know".into())
            }
        },
        other => ModelError::Broken(other.to_string()),
    }
}
