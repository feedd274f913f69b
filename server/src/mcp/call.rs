//! `tools/call` sent from the caller's own task: one request on the kept
//! connection, its answer read where it arrives — one JSON body, or the
//! call's event stream with the server's progress and questions on it.
//!
//! Why not rmcp's client for this one request (it does the rest): rmcp
//! passes every call through three tasks of its own (its service's, its
//! transport worker's, the answer stream's) and reads each message into
//! its untagged enums, trying variant after variant, each miss building a
//! `serde_json` error. A read cost the assistant about three times the CPU
//! of the same read from a Remote Tools host (docs/benchmarks.md, issue
//! #47). rmcp still shakes hands and keeps the session (noted here by
//! [`Noting`], so our calls carry it and its headers), lists tools, reads
//! resources, listens on the server's own stream and ends the session.
//! When the server forgot the session, rmcp starts a new one (a `ping`
//! through it does) and the call is sent once more.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures::StreamExt;
use reqwest::StatusCode;
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use rmcp::model::{ClientJsonRpcMessage, ElicitRequestParams, ElicitResult};
use rmcp::transport::common::client_side_sse::BoxedSseResponse;
use rmcp::transport::streamable_http_client::{
    StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse, StreamableHttpResponseLimits,
};
use serde::Serialize;
use serde_json::{Map, Value, json};
use sse_stream::SseStream;
use url::Url;

use super::error::McpError;

/// Who hears what the server tells during a call (its progress, its
/// questions for the user).
pub(super) trait Listener: Sync {
    fn progress(&self, progress: f64, total: Option<f64>, message: Option<String>);
    /// The user's answer, once given (a question nobody can be asked is declined or cancelled).
    fn ask(&self, request: ElicitRequestParams) -> futures::future::BoxFuture<'static, ElicitResult>;
}

/// What rmcp sent with its last POST: the session (none for a server
/// without sessions) and its headers — the protocol version and the
/// host's own (sensitive; never logged).
pub(super) struct Sent {
    session: Option<Arc<str>>,
    headers: HashMap<HeaderName, HeaderValue>,
}

/// rmcp's own reqwest client, noting what it sends ([`Sent`]). Every
/// method is reqwest's, unchanged.
#[derive(Clone)]
pub(super) struct Noting {
    pub http: reqwest::Client,
    pub sent: Arc<Mutex<Option<Arc<Sent>>>>,
}

impl Noting {
    fn note(&self, session: &Option<Arc<str>>, headers: &HashMap<HeaderName, HeaderValue>) {
        let sent = Sent { session: session.clone(), headers: headers.clone() };
        *self.sent.lock().unwrap_or_else(PoisonError::into_inner) = Some(Arc::new(sent));
    }
}

type HttpError = StreamableHttpError<reqwest::Error>;

impl StreamableHttpClient for Noting {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, HttpError> {
        self.note(&session_id, &custom_headers);
        self.http.post_message(uri, message, session_id, auth_header, custom_headers).await
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<StreamableHttpPostResponse, HttpError> {
        self.note(&session_id, &custom_headers);
        self.http
            .post_message_with_max_sse_event_size(
                uri,
                message,
                session_id,
                auth_header,
                custom_headers,
                max_sse_event_size,
            )
            .await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, HttpError> {
        self.note(&session_id, &custom_headers);
        self.http.post_message_with_response_limits(uri, message, session_id, auth_header, custom_headers, limits).await
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), HttpError> {
        self.http.delete_session(uri, session_id, auth_header, custom_headers).await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxedSseResponse, HttpError> {
        self.http.get_stream(uri, session_id, last_event_id, auth_header, custom_headers).await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<BoxedSseResponse, HttpError> {
        self.http
            .get_stream_with_max_sse_event_size(
                uri,
                session_id,
                last_event_id,
                auth_header,
                custom_headers,
                max_sse_event_size,
            )
            .await
    }
}

/// The JSON-RPC `tools/call` request `id`: the tool's `name` and
/// `arguments`, our `meta` with the call's progress token (its id) —
/// written from borrowed parts, no JSON value built for it.
pub(super) fn request<M: Serialize>(id: &str, name: &str, arguments: &Map<String, Value>, meta: &M) -> Vec<u8> {
    #[derive(Serialize)]
    struct Request<'a, M> {
        jsonrpc: &'static str,
        id: &'a str,
        method: &'static str,
        params: Params<'a, M>,
    }
    #[derive(Serialize)]
    struct Params<'a, M> {
        name: &'a str,
        arguments: &'a Map<String, Value>,
        #[serde(rename = "_meta")]
        meta: Meta<'a, M>,
    }
    #[derive(Serialize)]
    struct Meta<'a, M> {
        #[serde(flatten)]
        given: &'a M,
        // After the given: a key of the same name there cannot stand for it.
        #[serde(rename = "progressToken")]
        progress_token: &'a str,
    }
    let params = Params { name, arguments, meta: Meta { given: meta, progress_token: id } };
    serde_json::to_vec(&Request { jsonrpc: "2.0", id, method: "tools/call", params }).unwrap_or_default()
}

/// How a call sent by us ended.
pub(super) enum Called {
    /// The server's answer (the result as its JSON), or why there is none.
    Answer(Result<Value, McpError>),
    /// The server no longer knows the session: nothing ran.
    SessionGone,
}

/// Largest answer, and largest event of an answer's stream (as rmcp's
/// limits were set: a tool host's cap).
const CAP: usize = crate::host::MAX_RESPONSE_BYTES;
/// How often a call's stream that broke off before its answer is taken up
/// again (`Last-Event-ID`), and the longest wait before one.
const RESUMES: u32 = 3;
const LONGEST_RETRY: Duration = Duration::from_secs(5);

/// The server's URL and our client, for the calls we send ourselves.
#[derive(Clone)]
pub(super) struct Direct {
    pub http: reqwest::Client,
    pub url: Url,
    pub sent: Arc<Mutex<Option<Arc<Sent>>>>,
}

impl Direct {
    fn sent(&self) -> Option<Arc<Sent>> {
        self.sent.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    fn request(&self, method: reqwest::Method, sent: &Sent) -> reqwest::RequestBuilder {
        let mut headers = HeaderMap::with_capacity(sent.headers.len() + 2);
        for (name, value) in &sent.headers {
            headers.insert(name.clone(), value.clone());
        }
        if let Some(session) = &sent.session
            && let Ok(value) = HeaderValue::from_str(session)
        {
            headers.insert(HeaderName::from_static("mcp-session-id"), value);
        }
        self.http.request(method, self.url.clone()).headers(headers)
    }

    /// A JSON-RPC message `body` POSTed in the session.
    fn post(&self, sent: &Sent, body: Vec<u8>) -> reqwest::RequestBuilder {
        self.request(reqwest::Method::POST, sent)
            .header(ACCEPT, "application/json, text/event-stream")
            .header(CONTENT_TYPE, "application/json")
            .body(body)
    }

    /// Sends a notification or a response to the server (202 expected);
    /// what fails is only logged.
    pub async fn tell(&self, message: &Value) {
        let Some(sent) = self.sent() else { return };
        let request = self.post(&sent, serde_json::to_vec(message).unwrap_or_default());
        match request.send().await {
            Ok(response) if response.status().is_success() => {}
            Ok(response) => tracing::debug!(status = response.status().as_u16(), "the MCP server refused our message"),
            Err(error) => {
                tracing::debug!(error = %crate::host::error_chain(&error), "our message to the MCP server was lost")
            }
        }
    }

    /// The `tools/call` request `body` (made by [`request`]) as request
    /// `id`; its progress and questions go to `route`.
    pub async fn call(&self, id: &str, body: &[u8], route: &dyn Listener, tools_changed: &AtomicBool) -> Called {
        // Nothing noted yet (rmcp has not shaken hands): as a session gone.
        let Some(sent) = self.sent() else { return Called::SessionGone };
        let response = match self.post(&sent, body.to_vec()).send().await {
            Ok(response) => response,
            Err(error) => return Called::Answer(Err(unreachable(&error))),
        };
        let status = response.status();
        if status == StatusCode::NOT_FOUND && sent.session.is_some() {
            return Called::SessionGone;
        }
        let answer = match kind(&response) {
            _ if matches!(status, StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN) => {
                Err(McpError::Unauthorized(status.as_u16()))
            }
            Kind::Json => json_answer(response, id).await,
            _ if !status.is_success() => Err(McpError::Protocol(format!("the server answered {}", status.as_u16()))),
            Kind::Events => {
                let reading = Reading { direct: self, sent: &sent, id, route, tools_changed };
                reading.events(response).await
            }
            Kind::Other(kind) => Err(McpError::Protocol(format!("the server answered {kind}"))),
        };
        Called::Answer(answer)
    }
}

enum Kind {
    Json,
    Events,
    Other(String),
}

fn kind(response: &reqwest::Response) -> Kind {
    let Some(value) = response.headers().get(CONTENT_TYPE) else {
        return Kind::Other("without a content type".into());
    };
    let text = String::from_utf8_lossy(value.as_bytes());
    let essence = text.split(';').next().unwrap_or_default().trim().to_ascii_lowercase();
    match essence.as_str() {
        "application/json" => Kind::Json,
        "text/event-stream" => Kind::Events,
        _ => Kind::Other(essence.chars().filter(|c| !c.is_control()).take(100).collect()),
    }
}

fn unreachable(error: &reqwest::Error) -> McpError {
    if error.is_timeout() {
        return McpError::Unreachable("timed out connecting".into());
    }
    McpError::Unreachable(crate::host::error_chain(error))
}

fn too_large() -> McpError {
    McpError::Protocol(format!("the server's answer is larger than {CAP} bytes"))
}

fn not_mcp() -> McpError {
    McpError::Protocol("the server's answer is not MCP".into())
}

/// A JSON body: the answer to `id` (a JSON-RPC error too, whatever the status).
async fn json_answer(response: reqwest::Response, id: &str) -> Result<Value, McpError> {
    let status = response.status();
    let body = crate::host::body_capped(response).await.map_err(|broken| match broken {
        Some(cause) => McpError::Unreachable(cause),
        None => too_large(),
    })?;
    let Ok(mut message) = serde_json::from_slice::<Value>(&body) else {
        if status.is_success() {
            return Err(not_mcp());
        }
        return Err(McpError::Protocol(format!("the server answered {}", status.as_u16())));
    };
    answer_of(&mut message, id).unwrap_or_else(|| Err(not_mcp()))
}

/// The answer `message` gives to request `id`, if it is one.
fn answer_of(message: &mut Value, id: &str) -> Option<Result<Value, McpError>> {
    if message.get("id").and_then(Value::as_str) != Some(id) || message.get("method").is_some() {
        return None;
    }
    if let Some(error) = message.get("error") {
        let said = error.get("message").and_then(Value::as_str).unwrap_or("the call failed");
        return Some(Err(McpError::Failed(said.to_owned())));
    }
    match message.get_mut("result").map(Value::take) {
        Some(result @ Value::Object(_)) => Some(Ok(result)),
        _ => Some(Err(not_mcp())),
    }
}

/// One call's event stream, read until the call's answer.
struct Reading<'a> {
    direct: &'a Direct,
    sent: &'a Sent,
    id: &'a str,
    route: &'a dyn Listener,
    tools_changed: &'a AtomicBool,
}

impl Reading<'_> {
    async fn events(&self, mut response: reqwest::Response) -> Result<Value, McpError> {
        let mut last_event: Option<String> = None;
        let mut retry = None;
        let mut resumed = 0;
        loop {
            // The bytes read since the last whole event, capped: an event
            // that never ends cannot take the memory.
            let since_event = Arc::new(AtomicUsize::new(0));
            let counted = since_event.clone();
            let bytes = response.bytes_stream().map(move |chunk| {
                let chunk = chunk.map_err(|e| std::io::Error::other(crate::host::error_chain(&e)))?;
                if counted.fetch_add(chunk.len(), Ordering::Relaxed) + chunk.len() > CAP {
                    return Err(std::io::Error::other("too large"));
                }
                Ok(chunk)
            });
            let mut events = std::pin::pin!(SseStream::from_bytes_stream(bytes));
            let mut broke = None;
            while let Some(event) = events.next().await {
                let event = match event {
                    Ok(event) => event,
                    Err(_) if since_event.load(Ordering::Relaxed) > CAP => return Err(too_large()),
                    Err(error) => {
                        broke = Some(error.to_string());
                        break;
                    }
                };
                since_event.store(0, Ordering::Relaxed);
                if event.id.is_some() {
                    last_event = event.id;
                }
                retry = event.retry.or(retry);
                let is_message = event.event.as_deref().is_none_or(|name| name == "message");
                let Some(data) = event.data.filter(|data| is_message && !data.trim().is_empty()) else { continue };
                let mut message: Value = serde_json::from_str(&data).map_err(|_| not_mcp())?;
                if let Some(answer) = answer_of(&mut message, self.id) {
                    return answer;
                }
                self.heard(message).await;
            }
            // The stream ended before the answer: taken up again where it
            // broke off, if the server numbers its events.
            let Some(from) = last_event.clone().filter(|_| resumed < RESUMES) else {
                let why = broke.unwrap_or_else(|| "it ended".into());
                return Err(McpError::Unreachable(format!("the call's stream closed before its answer ({why})")));
            };
            resumed += 1;
            let wait = retry.map_or(Duration::from_millis(250) * resumed, Duration::from_millis);
            tokio::time::sleep(wait.min(LONGEST_RETRY)).await;
            let again = self
                .direct
                .request(reqwest::Method::GET, self.sent)
                .header(ACCEPT, "text/event-stream")
                .header("last-event-id", from)
                .send()
                .await;
            response = match again {
                Ok(again) if again.status().is_success() && matches!(kind(&again), Kind::Events) => again,
                Ok(again) => {
                    let status = again.status().as_u16();
                    return Err(McpError::Unreachable(format!("the call's stream could not be resumed ({status})")));
                }
                Err(error) => return Err(unreachable(&error)),
            };
        }
    }

    /// A message on the call's stream that is not its answer: progress,
    /// a changed tool list, a request of the server's.
    async fn heard(&self, mut message: Value) {
        let params = message.get_mut("params").map(Value::take).unwrap_or(Value::Null);
        let method = message.get("method").and_then(Value::as_str).unwrap_or_default();
        let Some(request) = message.get("id").cloned() else {
            match method {
                "notifications/progress" => {
                    let token = params.get("progressToken").and_then(Value::as_str);
                    let Some(progress) = params.get("progress").and_then(Value::as_f64) else { return };
                    if token == Some(self.id) {
                        let total = params.get("total").and_then(Value::as_f64);
                        let message = params.get("message").and_then(Value::as_str).map(str::to_owned);
                        self.route.progress(progress, total, message);
                    }
                }
                "notifications/tools/list_changed" => self.tools_changed.store(true, Ordering::Relaxed),
                _ => {}
            }
            return;
        };
        match method {
            "ping" => self.direct.tell(&reply(request, Ok(json!({})))).await,
            "elicitation/create" => {
                let Ok(asked) = serde_json::from_value::<ElicitRequestParams>(params) else {
                    return self.direct.tell(&reply(request, Err((-32602, "Invalid params")))).await;
                };
                let answer = self.route.ask(asked);
                // Answered while the stream is read on (the server may
                // tell progress meanwhile); sent when the user answers.
                let direct = self.direct.clone();
                tokio::spawn(async move {
                    let result: ElicitResult = answer.await;
                    direct.tell(&reply(request, Ok(serde_json::to_value(&result).unwrap_or_default()))).await;
                });
            }
            _ => self.direct.tell(&reply(request, Err((-32601, "Method not found")))).await,
        }
    }
}

/// Our JSON-RPC answer to the server's request `id`: a result, or an
/// error's code and message.
fn reply(id: Value, outcome: Result<Value, (i64, &str)>) -> Value {
    match outcome {
        Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
        Err((code, said)) => json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": said}}),
    }
}
