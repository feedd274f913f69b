//! One connection to an MCP server: rmcp's client over Streamable HTTP,
//! sending through our own reqwest client (the one TLS stack; no
//! redirects; for a server that must be public, the resolver that returns
//! only public addresses). Protocol `2025-11-25` is asked for (rmcp's
//! default, `2026-07-28`, has no `initialize`); the session is rmcp's.
//! `tools/call` is sent by us, in that session (`super::call` says why).
//! Every failure is an [`McpError`] that names its cause, never a header.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use reqwest::header::{HeaderName, HeaderValue};
use rmcp::model::{
    ClientCapabilities, ClientConfig, ClientRequest, ElicitRequestParams, ElicitResult, ElicitationAction,
    ElicitationCapability, ErrorData, FormElicitationCapability, Implementation, NumberOrString,
    PaginatedRequestParams, ProgressNotificationParam, ProgressToken, ProtocolVersion, RequestId,
};
use rmcp::service::{
    ClientInitializeError, InboundStreamOrigin, NotificationContext, RequestContext, RoleClient, RunningService,
    ServiceError,
};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::common::client_side_sse::ExponentialBackoff;
use rmcp::transport::streamable_http_client::{StreamableHttpClientTransportConfig, StreamableHttpError};
use rmcp::{ClientHandler, ServiceExt};
use serde_json::{Map, Value};
use url::Url;

use futures::future::BoxFuture;

use super::call::{self, Called, Direct, Listener, Noting};

/// Most pages of `tools/list` read (a server that pages for ever stops here).
const MAX_PAGES: usize = 20;
/// Most tools kept from a server.
pub const MAX_TOOLS: usize = 512;

pub use super::error::McpError;

/// What a server tells about one of our calls while it runs.
pub enum CallEvent {
    /// `notifications/progress` with the call's token.
    Progress { progress: f64, total: Option<f64>, message: Option<String> },
    /// `elicitation/create` (form mode) on the call's own stream: the user's
    /// input is wanted; the call's time stands still until it is answered.
    /// Boxed: every call's channel holds a block of 32 events from its start.
    Elicit(Box<Elicitation>),
}

/// A server's request for the user's input during a call. Answered once;
/// dropped unanswered, it is cancelled (the spec's `cancel`).
pub struct Elicitation {
    /// What the server asks, in its words (shown as text, never markup).
    pub message: String,
    /// The requested schema (the spec's flat subset), as JSON.
    pub schema: Value,
    /// Its properties' names in the order the server sent them.
    pub order: Vec<String>,
    reply: Option<tokio::sync::oneshot::Sender<ElicitResult>>,
    /// The call's count of unanswered elicitations, and when one was last answered.
    waiting: Arc<AtomicUsize>,
    answered_at: Arc<Mutex<Option<tokio::time::Instant>>>,
}

/// The user's answer to an elicitation.
#[derive(Clone, Debug, PartialEq)]
pub enum ElicitAnswer {
    Accept(Map<String, Value>),
    Decline,
    Cancel,
}

impl Elicitation {
    pub fn answer(mut self, answer: ElicitAnswer) {
        let result = match answer {
            ElicitAnswer::Accept(content) => {
                ElicitResult::new(ElicitationAction::Accept).with_content(Value::Object(content))
            }
            ElicitAnswer::Decline => ElicitResult::new(ElicitationAction::Decline),
            ElicitAnswer::Cancel => ElicitResult::new(ElicitationAction::Cancel),
        };
        if let Some(reply) = self.reply.take() {
            let _ = reply.send(result);
        }
    }
}

impl Drop for Elicitation {
    fn drop(&mut self) {
        if let Some(reply) = self.reply.take() {
            let _ = reply.send(ElicitResult::new(ElicitationAction::Cancel));
        }
        *self.answered_at.lock().unwrap_or_else(PoisonError::into_inner) = Some(tokio::time::Instant::now());
        self.waiting.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Where a call's events go.
#[derive(Clone)]
struct Route {
    /// None: nobody listens (progress is dropped, an elicitation cancelled).
    events: Option<tokio::sync::mpsc::UnboundedSender<CallEvent>>,
    waiting: Arc<AtomicUsize>,
    answered_at: Arc<Mutex<Option<tokio::time::Instant>>>,
}

impl Listener for Route {
    /// Tells the call's progress (its message without control characters,
    /// at most 200 of them).
    fn progress(&self, progress: f64, total: Option<f64>, message: Option<String>) {
        let Some(events) = &self.events else { return };
        let message = message.map(|m| m.chars().filter(|c| !c.is_control()).take(200).collect());
        let _ = events.send(CallEvent::Progress { progress, total, message });
    }

    /// Asks the call's user what the server asks (form mode; any other is
    /// declined): the answer, once given. From now until then the call's
    /// time stands still.
    fn ask(&self, request: ElicitRequestParams) -> BoxFuture<'static, ElicitResult> {
        let answered = match request {
            ElicitRequestParams::FormElicitationParams { message, requested_schema, .. } => {
                // The form shows the fields in the server's order: rmcp keeps
                // it beside its sorted map (a JSON value would sort them again).
                let order = requested_schema.property_order.clone().unwrap_or_default();
                let schema = serde_json::to_value(&requested_schema).unwrap_or_default();
                let (reply, answered) = tokio::sync::oneshot::channel();
                self.waiting.fetch_add(1, Ordering::SeqCst);
                let elicitation = Elicitation {
                    message,
                    schema,
                    order,
                    reply: Some(reply),
                    waiting: self.waiting.clone(),
                    answered_at: self.answered_at.clone(),
                };
                // Nobody listens: the elicitation, dropped, is cancelled.
                let sent = self.events.as_ref().map(|events| events.send(CallEvent::Elicit(Box::new(elicitation))));
                Some(sent.and_then(Result::ok).map(|()| answered))
            }
            _ => None,
        };
        Box::pin(async move {
            match answered {
                None => ElicitResult::new(ElicitationAction::Decline),
                Some(None) => ElicitResult::new(ElicitationAction::Cancel),
                Some(Some(answered)) => answered.await.unwrap_or_else(|_| ElicitResult::new(ElicitationAction::Cancel)),
            }
        })
    }
}

/// The calls in flight on a connection: by progress token and by request id.
#[derive(Default)]
struct Routes {
    by_token: HashMap<ProgressToken, Route>,
    by_id: HashMap<RequestId, Route>,
}

/// What rmcp calls us for: a changed tool list is remembered until read;
/// progress and elicitations go to the call they belong to (one connection
/// serves many users' turns at once).
#[derive(Clone, Default)]
pub struct Handler {
    tools_changed: Arc<AtomicBool>,
    routes: Arc<Mutex<Routes>>,
}

impl Handler {
    fn routes(&self) -> std::sync::MutexGuard<'_, Routes> {
        self.routes.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The route `find` picks, waiting a moment for it: rmcp may send a
    /// call (and its server answer on the call's stream) on another thread
    /// before the caller has registered the call's id and token.
    async fn route(&self, find: impl Fn(&Routes) -> Option<Route>) -> Option<Route> {
        for _ in 0..100 {
            if let Some(route) = find(&self.routes()) {
                return Some(route);
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        None
    }
}

impl ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        // Tools, form-mode elicitation and MCP Apps' UI resources. No
        // sampling, no roots, no URL-mode elicitation (docs/mcp.md).
        let mut capabilities = ClientCapabilities::default();
        capabilities.elicitation = Some(ElicitationCapability::new().with_form(FormElicitationCapability::new()));
        let mut ui = serde_json::Map::new();
        ui.insert("mimeTypes".into(), serde_json::json!([super::apps::MIME_TYPE]));
        capabilities.extensions = Some([(super::apps::EXTENSION.to_owned(), ui)].into_iter().collect());
        ClientConfig::new(capabilities, Implementation::new("context-assistant", env!("CARGO_PKG_VERSION")))
            .with_protocol_version(ProtocolVersion::V_2025_11_25)
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.tools_changed.store(true, Ordering::Relaxed);
    }

    async fn on_progress(&self, params: ProgressNotificationParam, _context: NotificationContext<RoleClient>) {
        // A token no call of ours holds (late, or forged) is dropped.
        let token = params.progress_token.clone();
        if let Some(route) = self.route(|routes| routes.by_token.get(&token).cloned()).await {
            route.progress(params.progress, params.total, params.message);
        }
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        // Only a request on one of our calls' own streams can be shown to the
        // user that call is for; anything else (the shared GET stream, a
        // URL-mode request we did not advertise) is declined.
        let route = match context.extensions.get::<InboundStreamOrigin>() {
            Some(InboundStreamOrigin::OutboundRequest(id)) => self.route(|routes| routes.by_id.get(id).cloned()).await,
            _ => None,
        };
        let Some(route) = route else {
            return Ok(ElicitResult::new(ElicitationAction::Decline));
        };
        let answered = route.ask(request);
        Ok(tokio::select! {
            answer = answered => answer,
            () = context.ct.cancelled() => ElicitResult::new(ElicitationAction::Cancel),
        })
    }
}

/// A call in flight: its routes are removed when it ends, and a call whose
/// caller stopped waiting (a Stop, a timeout, the turn's end) is cancelled
/// on the server (`notifications/cancelled`). Over Streamable HTTP the call
/// and its cancellation are two POSTs on their own connections, so a
/// cancellation sent right after the call can reach the server first,
/// which then ignores it (an unknown request) and runs the call to its
/// end: it is sent again after [`CANCEL_AGAIN`]. A server ignores one for
/// a request it has finished (the protocol's cancellation rules).
struct InFlight {
    handler: Handler,
    direct: Direct,
    id: Arc<str>,
    done: bool,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        {
            let mut routes = self.handler.routes();
            let id = NumberOrString::String(self.id.clone());
            routes.by_id.remove(&id);
            routes.by_token.remove(&ProgressToken(id));
        }
        if !self.done
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            let (direct, id) = (self.direct.clone(), self.id.clone());
            let cancel = serde_json::json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                "params": {"requestId": id, "reason": "the caller stopped waiting"}});
            runtime.spawn(async move {
                let mut waited = Duration::ZERO;
                for after in std::iter::once(Duration::ZERO).chain(CANCEL_AGAIN) {
                    tokio::time::sleep(after - waited).await;
                    waited = after;
                    direct.tell(&cancel).await;
                }
            });
        }
    }
}

/// When a cancellation is sent again, after the first (see [`InFlight`]).
const CANCEL_AGAIN: [Duration; 2] = [Duration::from_millis(500), Duration::from_secs(2)];

/// Where and how to connect.
pub struct Endpoint {
    pub url: Url,
    /// Sent with every request (a bearer token, say); never logged.
    pub headers: Vec<(String, String)>,
    /// Our client for this server (public-only unless private hosts are allowed).
    pub http: reqwest::Client,
    /// How long the handshake and each call may take.
    pub timeout: Duration,
}

/// A live connection.
pub struct Server {
    service: RunningService<RoleClient, Handler>,
    handler: Handler,
    timeout: Duration,
    /// `tools/call`, sent by us (super::call says why).
    direct: Direct,
    /// Our calls so far: their ids are `ca-1`, `ca-2`, … (rmcp's are numbers).
    calls: AtomicU64,
}

/// Headers the transport sets itself; a host may not.
const RESERVED: &[&str] = &["accept", "mcp-session-id", "last-event-id", "mcp-protocol-version", "content-type"];

/// The headers as HTTP headers (marked sensitive), or why one cannot be
/// (naming the header, never its value).
pub fn headers(given: &[(String, String)]) -> Result<HashMap<HeaderName, HeaderValue>, String> {
    let mut out = HashMap::new();
    for (name, value) in given {
        let header =
            HeaderName::from_bytes(name.trim().as_bytes()).map_err(|_| format!("`{name}` is not a header name"))?;
        if RESERVED.contains(&header.as_str()) {
            return Err(format!("the `{header}` header is the protocol's own"));
        }
        let mut value =
            HeaderValue::from_str(value).map_err(|_| format!("the `{header}` header's value cannot be sent"))?;
        value.set_sensitive(true);
        out.insert(header, value);
    }
    Ok(out)
}

/// Connects and shakes hands.
pub async fn connect(endpoint: Endpoint) -> Result<Server, McpError> {
    let headers = headers(&endpoint.headers).map_err(McpError::Headers)?;
    // The size cap of every tool host's answer (rmcp's own default is 16 MiB).
    let cap = crate::host::MAX_RESPONSE_BYTES;
    let mut config = StreamableHttpClientTransportConfig::with_uri(endpoint.url.as_str())
        .custom_headers(headers)
        .max_sse_event_size(cap)
        .max_json_response_size(cap);
    // A stream the server cut is resumed a few times, not for ever.
    let mut backoff = ExponentialBackoff::default();
    backoff.max_times = Some(3);
    backoff.max_delay = Some(Duration::from_secs(5));
    config.retry_config = Arc::new(backoff);
    let sent = Arc::default();
    let direct = Direct { http: endpoint.http.clone(), url: endpoint.url, sent: Arc::clone(&sent) };
    let transport = StreamableHttpClientTransport::with_client(Noting { http: endpoint.http, sent }, config);
    let handler = Handler::default();
    let started = tokio::time::timeout(endpoint.timeout, handler.clone().serve(transport)).await;
    let service = match started {
        Err(_) => return Err(McpError::Timeout(endpoint.timeout)),
        Ok(Err(error)) => return Err(initialize_error(&error)),
        Ok(Ok(service)) => service,
    };
    Ok(Server { service, handler, timeout: endpoint.timeout, direct, calls: AtomicU64::new(0) })
}

impl Server {
    /// Every tool the server lists (its pages followed, at most
    /// [`MAX_TOOLS`]), each as its JSON; clears the changed flag.
    pub async fn tools(&self) -> Result<Vec<Value>, McpError> {
        self.handler.tools_changed.store(false, Ordering::Relaxed);
        let mut tools = Vec::new();
        let mut cursor = None;
        for _ in 0..MAX_PAGES {
            let params = PaginatedRequestParams::default().with_cursor(cursor);
            let page = tokio::time::timeout(self.timeout, self.service.list_tools(Some(params)))
                .await
                .map_err(|_| McpError::Timeout(self.timeout))?
                .map_err(|e| service_error(&e))?;
            for tool in page.tools {
                if tools.len() == MAX_TOOLS {
                    return Ok(tools);
                }
                tools.push(serde_json::to_value(&tool).map_err(|e| McpError::Protocol(e.to_string()))?);
            }
            cursor = page.next_cursor.filter(|c| !c.is_empty());
            if cursor.is_none() {
                return Ok(tools);
            }
        }
        Ok(tools)
    }

    /// `resources/read` of `uri`: the result as its JSON.
    pub async fn read_resource(&self, uri: &str) -> Result<Value, McpError> {
        let params = rmcp::model::ReadResourceRequestParams::new(uri);
        let result = tokio::time::timeout(self.timeout, self.service.read_resource(params))
            .await
            .map_err(|_| McpError::Timeout(self.timeout))?
            .map_err(|e| service_error(&e))?;
        serde_json::to_value(&result).map_err(|e| McpError::Protocol(e.to_string()))
    }

    /// True when the server said its tools changed since they were last listed.
    pub fn tools_changed(&self) -> bool {
        self.handler.tools_changed.load(Ordering::Relaxed)
    }

    /// The server's name and version as it gave them.
    pub fn server_info(&self) -> Option<(String, String)> {
        let info = self.service.peer_info()?;
        let server = info.server_info.as_ref()?;
        Some((server.name.clone(), server.version.clone()))
    }

    /// Whether the server said it announces changes to its tools.
    pub fn announces_tool_changes(&self) -> bool {
        self.service
            .peer_info()
            .and_then(|info| info.capabilities.tools.as_ref().and_then(|t| t.list_changed))
            .unwrap_or(false)
    }

    /// False once the connection is gone for good.
    pub fn is_open(&self) -> bool {
        !self.service.is_transport_closed()
    }

    /// `tools/call` with `arguments` and our `_meta` (the caller's scope);
    /// the result as its JSON. A call that outlives the timeout is
    /// abandoned, and the server told (`notifications/cancelled`).
    pub async fn call(
        &self,
        name: &str,
        arguments: Map<String, Value>,
        meta: Map<String, Value>,
    ) -> Result<Value, McpError> {
        // Nobody listens: progress is dropped, an elicitation cancelled.
        self.call_with(name, &arguments, &meta, None).await
    }

    /// [`Server::call`], its progress and elicitations sent to `events`.
    /// The timeout stands still while an elicitation waits for the user
    /// (the turn's own time limit still holds).
    pub async fn call_with_events(
        &self,
        name: &str,
        arguments: Map<String, Value>,
        meta: Map<String, Value>,
        events: tokio::sync::mpsc::UnboundedSender<CallEvent>,
    ) -> Result<Value, McpError> {
        self.call_with(name, &arguments, &meta, Some(events)).await
    }

    /// [`Server::call_with_events`] from borrowed parts (a turn's read
    /// copies none of them); `meta` is a map's JSON, `events` optional.
    pub async fn call_with(
        &self,
        name: &str,
        arguments: &Map<String, Value>,
        meta: &(impl serde::Serialize + Sync),
        events: Option<tokio::sync::mpsc::UnboundedSender<CallEvent>>,
    ) -> Result<Value, McpError> {
        let id: Arc<str> = format!("ca-{}", self.calls.fetch_add(1, Ordering::Relaxed) + 1).into();
        let body = call::request(&id, name, arguments, meta);
        // Registered before the call is sent: the server may tell its
        // progress on its own stream (rmcp's), where `Handler` finds it.
        let waiting = Arc::new(AtomicUsize::new(0));
        let answered_at = Arc::new(Mutex::new(None));
        let route = Route { events, waiting: waiting.clone(), answered_at: answered_at.clone() };
        {
            let mut routes = self.handler.routes();
            let request = NumberOrString::String(id.clone());
            routes.by_id.insert(request.clone(), route.clone());
            routes.by_token.insert(ProgressToken(request), route.clone());
        }
        let mut in_flight =
            InFlight { handler: self.handler.clone(), direct: self.direct.clone(), id: id.clone(), done: false };
        let answer = self.send(&id, &body, &route);
        tokio::pin!(answer);
        let mut deadline = tokio::time::Instant::now() + self.timeout;
        let result = loop {
            tokio::select! {
                result = &mut answer => break result,
                () = tokio::time::sleep_until(deadline) => {
                    let now = tokio::time::Instant::now();
                    // The user is being asked: the time stands still, and
                    // starts again in full once they answered.
                    if waiting.load(Ordering::SeqCst) > 0 {
                        deadline = now + Duration::from_millis(200);
                        continue;
                    }
                    let answered = *answered_at.lock().unwrap_or_else(PoisonError::into_inner);
                    match answered.map(|at| at + self.timeout).filter(|resume| *resume > now) {
                        Some(resume) => deadline = resume,
                        None => return Err(McpError::Timeout(self.timeout)),
                    }
                }
            }
        };
        in_flight.done = true;
        result
    }

    /// Sends the call; when the server forgot the session, rmcp starts a
    /// new one (a `ping` through it finds the session gone) and the call
    /// is sent once more (nothing ran the first time).
    async fn send(&self, id: &str, body: &[u8], route: &Route) -> Result<Value, McpError> {
        let changed = &self.handler.tools_changed;
        if let Called::Answer(answer) = self.direct.call(id, body, route, changed).await {
            return answer;
        }
        self.service
            .peer()
            .send_request(ClientRequest::PingRequest(Default::default()))
            .await
            .map_err(|e| service_error(&e))?;
        match self.direct.call(id, body, route, changed).await {
            Called::Answer(answer) => answer,
            Called::SessionGone => Err(McpError::Unreachable("the server forgot the session again".into())),
        }
    }

    /// Ends the session (rmcp asks the server to forget it).
    pub async fn close(self) {
        let _ = self.service.cancel().await;
    }
}

type HttpError = StreamableHttpError<reqwest::Error>;

/// The status at the head of rmcp's "HTTP 401 Unauthorized: …" messages
/// (the only place a 401 without a challenge shows its status).
fn status_in(message: &str) -> Option<u16> {
    message.strip_prefix("HTTP ")?.get(..3)?.parse().ok()
}

fn http_error(error: &HttpError) -> McpError {
    match error {
        StreamableHttpError::Client(e) if e.is_timeout() => McpError::Unreachable("timed out connecting".into()),
        StreamableHttpError::Client(e) => McpError::Unreachable(crate::host::error_chain(e)),
        StreamableHttpError::AuthRequired(_) => McpError::Unauthorized(401),
        StreamableHttpError::InsufficientScope(_) => McpError::Unauthorized(403),
        StreamableHttpError::HttpStatus(status) => match status.status {
            code @ (401 | 403) => McpError::Unauthorized(code),
            code => McpError::Protocol(format!("the server answered {code}")),
        },
        StreamableHttpError::UnexpectedServerResponse(message) => match status_in(message) {
            Some(code @ (401 | 403)) => McpError::Unauthorized(code),
            Some(code) => McpError::Protocol(format!("the server answered {code}")),
            None => McpError::Protocol("the server's answer is not MCP".into()),
        },
        StreamableHttpError::UnexpectedContentType(kind) => {
            McpError::Protocol(format!("the server answered {}", kind.as_deref().unwrap_or("without a content type")))
        }
        other => McpError::Protocol(other.to_string()),
    }
}

fn transport_error(error: &rmcp::transport::DynamicTransportError) -> McpError {
    match error.error.downcast_ref::<HttpError>() {
        Some(http) => http_error(http),
        None => McpError::Unreachable(error.to_string()),
    }
}

fn initialize_error(error: &ClientInitializeError) -> McpError {
    match error {
        ClientInitializeError::TransportError { error, .. } => transport_error(error),
        ClientInitializeError::JsonRpcError(e) => {
            McpError::Protocol(format!("the server refused to start: {}", e.message))
        }
        other => McpError::Protocol(other.to_string()),
    }
}

fn service_error(error: &ServiceError) -> McpError {
    match error {
        ServiceError::TransportSend(e) => transport_error(e),
        ServiceError::TransportClosed => McpError::Unreachable("the connection closed".into()),
        ServiceError::Timeout { timeout } => McpError::Timeout(*timeout),
        ServiceError::McpError(e) => McpError::Failed(e.message.to_string()),
        other => McpError::Protocol(other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hosts_headers_are_checked_by_name_and_never_echoed() {
        let ok = headers(&[("Authorization".into(), "Bearer s3cret".into()), ("X-Tenant".into(), "a".into())]).unwrap();
        assert!(ok.values().all(HeaderValue::is_sensitive));
        for (name, value) in [("Mcp-Session-Id", "x"), ("Accept", "x"), ("bad name", "x"), ("X-Ok", "s3cret\r\nX: y")] {
            let error = headers(&[(name.into(), value.into())]).unwrap_err();
            assert!(!error.contains("s3cret"), "{error}");
        }
    }

    #[test]
    fn a_status_is_read_from_rmcps_message() {
        assert_eq!(status_in("HTTP 401 Unauthorized: go away"), Some(401));
        assert_eq!(status_in("could not parse JSON"), None);
    }
}
