//! The Remote Tools client (remote-tools-contract.md): discovers a host's
//! tools and context and calls preview/execute, with the bearer secret, the
//! execution scope, a timeout per call, a cap on response size and no
//! redirects. The host's own error text is logged, never shown.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use url::Url;

use crate::lanes::{Lanes, Seat};
use crate::secret::Secret;

/// Largest host answer read, in bytes.
pub const MAX_RESPONSE_BYTES: usize = 1024 * 1024;

/// Where a workspace's tools live.
#[derive(Clone, Debug)]
pub struct HostTarget {
    pub base_url: Url,
    pub secret: Secret,
    /// This server's own built-in host (the bistro demo), which lives on
    /// loopback; every other host must be public unless configured otherwise.
    pub trusted: bool,
}

/// Who a call acts for (remote-tools-contract.md, "Execution scope").
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ExecutionScope {
    pub workspace_id: String,
    pub external_user_id: String,
    pub permissions: Vec<String>,
    pub request_id: String,
}

impl ExecutionScope {
    /// The same scope with a `requestId` of its own: every call to a host
    /// carries a fresh one (a host may de-duplicate on it), but an Apply,
    /// whose `requestId` is its action's id so that retries are recognisable.
    pub fn for_call(&self) -> Self {
        Self { request_id: crate::ids::new_id("req"), ..self.clone() }
    }
}

pub use widget::wire::Verb;

/// One tool from `GET /tools`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ToolSpec {
    pub name: String,
    #[serde(default)]
    pub description: String,
    pub verb: Verb,
    #[serde(rename = "inputSchema", default)]
    pub input_schema: InputSchema,
    /// Our extension: the host lets a component's own buttons run this
    /// create or update at once, without a preview (`get` tools need not say so).
    #[serde(default)]
    pub direct: bool,
    /// Where the tool comes from: set by the tool sources, never read from a host.
    #[serde(skip)]
    pub origin: ToolOrigin,
}

/// Which integration offers a tool, under which name, and how it was defined.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ToolOrigin {
    /// The integration's name (`generic-rest`, or an MCP server's).
    pub integration: String,
    /// The tool's own name there (the model may see it prefixed).
    pub name: String,
    /// The title its server gave it (MCP), shown on a pending action.
    pub title: Option<String>,
    /// A digest of its definition as listed: a staged action runs only while it holds.
    pub digest: String,
    /// The `ui://` resource of its own interactive UI (an MCP App), if it ships one.
    pub app: Option<String>,
}

/// A tool's `inputSchema`, kept as its compact JSON text and parsed where
/// it is read (the arguments' check, the model's request). A turn holds the
/// offered tools while it waits on one, and parsed, every object of a
/// schema is a B-tree node of ~600 bytes however few its keys: a host with
/// dozens of tools cost tens of KB a waiting turn (issue #47).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InputSchema(Box<str>);

impl InputSchema {
    pub fn new(schema: &Value) -> Self {
        Self(schema.to_string().into_boxed_str())
    }

    /// The schema as JSON.
    pub fn value(&self) -> Value {
        // Written by `new` from a `Value`: it always reads.
        serde_json::from_str(&self.0).unwrap_or_else(|_| empty_schema())
    }
}

impl Default for InputSchema {
    fn default() -> Self {
        Self::new(&empty_schema())
    }
}

impl Serialize for InputSchema {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.value().serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for InputSchema {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Value::deserialize(deserializer).map(|schema| Self::new(&schema))
    }
}

fn empty_schema() -> Value {
    serde_json::json!({"type": "object", "properties": {}})
}

/// A failed host call. `Display` is for logs; users see [`HostError::user_message`].
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    #[error("host refused the secret (401): {0}")]
    Unauthorized(String),
    #[error("host rejected the arguments (400): {0}")]
    BadRequest(String),
    #[error("host denied permission (403): {0}")]
    Forbidden(String),
    #[error("host does not know the tool or entity (404): {0}")]
    NotFound(String),
    #[error("host failed with status {status}: {message}")]
    Failed { status: u16, message: String },
    #[error("host answer is not usable: {0}")]
    Invalid(String),
    /// Our extension: `409` with `"stale": true` — the host's data moved
    /// since the preview, so it did not run the change.
    #[error("host found its data changed since the preview (409 stale): {0}")]
    Stale(String),
    #[error("host did not answer within {0:?}")]
    Timeout(Duration),
    #[error("host could not be reached: {0}")]
    Unreachable(String),
    /// The tool ran and failed, saying why for the model (an MCP result
    /// with `isError`): the model is told that text, to correct itself.
    #[error("the tool failed: {0}")]
    ToolFailed(String),
}

impl HostError {
    /// A generic line for the user and the model: never the host's own text.
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
            HostError::Unauthorized(_) => "error_host_unauthorized",
            HostError::BadRequest(_) => "error_host_bad_request",
            HostError::Forbidden(_) => "error_host_forbidden",
            HostError::NotFound(_) => "error_host_not_found",
            HostError::Failed { .. } | HostError::Invalid(_) | HostError::ToolFailed(_) => "error_host_failed",
            HostError::Stale(_) => "error_host_stale",
            HostError::Timeout(_) => "error_host_timeout",
            HostError::Unreachable(_) => "error_host_unreachable",
        }
    }

    /// A short machine code for logs and tool results.
    pub fn code(&self) -> &'static str {
        match self {
            HostError::Unauthorized(_) => "host_unauthorized",
            HostError::BadRequest(_) => "host_bad_request",
            HostError::Forbidden(_) => "host_forbidden",
            HostError::NotFound(_) => "host_not_found",
            HostError::Failed { .. } => "host_failed",
            HostError::Invalid(_) => "host_invalid_answer",
            HostError::Stale(_) => "stale",
            HostError::Timeout(_) => "host_timeout",
            HostError::Unreachable(_) => "host_unreachable",
            HostError::ToolFailed(_) => "tool_failed",
        }
    }

    /// What the model is told: the generic line, but for a tool's own
    /// failure, whose text is meant for the model.
    pub fn for_model(&self) -> String {
        match self {
            HostError::ToolFailed(said) => said.clone(),
            other => other.user_message(),
        }
    }
}

/// An answer as it came back (the host checker reads it whole).
#[derive(Debug)]
pub struct RawAnswer {
    pub status: u16,
    pub body: Vec<u8>,
    /// A redirect's target, if the host answered one.
    pub location: Option<String>,
    pub elapsed: Duration,
}

impl RawAnswer {
    pub fn json(&self) -> Option<Value> {
        serde_json::from_slice(&self.body).ok()
    }

    pub fn ok(&self) -> bool {
        (200..300).contains(&self.status)
    }
}

/// A shared HTTP client for tool hosts.
#[derive(Clone, Debug)]
pub struct HostClient {
    /// For hosts that must be public: it connects only to the public
    /// addresses its resolver returns (so a name cannot be re-pointed at
    /// loopback between a check and the call).
    public: Arc<Lanes>,
    /// For trusted hosts, or every host when private ones are allowed.
    any: Arc<Lanes>,
    /// For MCP servers when `extra_roots` are configured: HTTP/1 (no `h2`
    /// offered), trusting them beside the system's.
    mcp_tls: Option<native_tls::TlsConnector>,
    allow_private: bool,
    timeout: Duration,
}

/// How a node's calls to Remote Tools hosts go (README, "Tool hosts over
/// HTTP/2").
#[derive(Clone, Debug)]
pub struct HostConnections {
    /// Calls in flight on one client (one HTTP/2 connection to a host)
    /// before the next is used (`CA_TOOL_HOST_CALLS_PER_CONNECTION`).
    pub calls_per_connection: usize,
    /// PEM certificates trusted for Remote Tools hosts and MCP servers
    /// beside the system's (`CA_TOOL_HOSTS_CA_FILE`: a private CA).
    pub extra_roots: Vec<Vec<u8>>,
}

impl Default for HostConnections {
    fn default() -> Self {
        Self { calls_per_connection: 100, extra_roots: Vec::new() }
    }
}

/// Every outbound HTTP client starts here: reqwest with the process's one
/// TLS connector, over HTTP/1. Left to itself, each `build()` makes its own
/// connector and OpenSSL parses the system's whole CA bundle again (about
/// half a billion instructions, ~0.15 s of CPU a client: a knowledge sync,
/// a workspace's own model and every replica start paid it). At most 256
/// idle connections are kept per host: a burst of thousands of turns
/// waiting on tools would otherwise keep as many sockets (and their
/// buffers) open to the model afterwards.
pub fn client_builder() -> reqwest::ClientBuilder {
    static TLS: std::sync::OnceLock<Option<native_tls::TlsConnector>> = std::sync::OnceLock::new();
    let tls = TLS.get_or_init(|| tls_connector(false, &[]));
    preconfigured(tls.as_ref()).http1_only()
}

/// A client builder on `tls`, or on reqwest's own connector without one.
fn preconfigured(tls: Option<&native_tls::TlsConnector>) -> reqwest::ClientBuilder {
    let builder = reqwest::Client::builder().pool_max_idle_per_host(256);
    match tls {
        Some(tls) => builder.tls_backend_preconfigured(tls.clone()),
        None => builder,
    }
}

/// A TLS connector: `h2` offers HTTP/2 by ALPN beside HTTP/1.1; `roots`
/// are trusted beside the system's. None (reqwest then builds its own, and
/// says why the same way) if OpenSSL cannot make one.
fn tls_connector(h2: bool, roots: &[Vec<u8>]) -> Option<native_tls::TlsConnector> {
    let mut builder = native_tls::TlsConnector::builder();
    if h2 {
        builder.request_alpns(&["h2", "http/1.1"]);
    }
    for pem in roots {
        match native_tls::Certificate::from_pem(pem) {
            Ok(certificate) => drop(builder.add_root_certificate(certificate)),
            // The configuration checked each one (config.rs).
            Err(error) => tracing::warn!(%error, "a configured CA certificate does not read"),
        }
    }
    builder.build().inspect_err(|error| tracing::warn!(%error, "cannot set up TLS once for every client")).ok()
}

/// An HTTP client for tool sources: no redirects, no proxy, a connect
/// timeout and our user agent. `public_only` connects only to the public
/// addresses its resolver returns (so a name cannot be re-pointed at
/// loopback between a check and the call). An idle connection is kept for
/// 4 s. No total timeout: each call has its own. HTTP/1 (MCP servers: a
/// session's calls on one HTTP/2 connection would queue at its limit).
pub fn tool_http_client(timeout: Duration, public_only: bool) -> reqwest::Client {
    tool_client(client_builder(), timeout, public_only)
}

fn tool_client(builder: reqwest::ClientBuilder, timeout: Duration, public_only: bool) -> reqwest::Client {
    let mut builder = builder
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .connect_timeout(timeout.min(Duration::from_secs(5)))
        .user_agent(concat!("context-assistant/", env!("CARGO_PKG_VERSION")));
    // Node's servers close an idle keep-alive connection after 5 s; a
    // pooled one reused just then fails under the request (unreachable).
    builder = builder.pool_idle_timeout(Duration::from_secs(4));
    if public_only {
        builder = builder.dns_resolver(Arc::new(PublicOnlyResolver));
    }
    builder.build().expect("the HTTP client configuration is valid")
}

/// The TLS connector for Remote Tools hosts: HTTP/2 offered by ALPN, and
/// the configured roots. Without extra roots, one for the process (each
/// new one parses the system's CA bundle again).
fn host_tls(connections: &HostConnections) -> Option<native_tls::TlsConnector> {
    static TLS: std::sync::OnceLock<Option<native_tls::TlsConnector>> = std::sync::OnceLock::new();
    if connections.extra_roots.is_empty() {
        TLS.get_or_init(|| tls_connector(true, &[])).clone()
    } else {
        tls_connector(true, &connections.extra_roots)
    }
}

/// Clients for Remote Tools hosts on `tls`, in lanes of
/// `calls_per_connection` calls (lanes.rs).
fn host_lanes(
    timeout: Duration,
    public_only: bool,
    tls: Option<native_tls::TlsConnector>,
    calls_per_connection: usize,
) -> Lanes {
    Lanes::new(calls_per_connection, move || tool_client(preconfigured(tls.as_ref()), timeout, public_only))
}

#[derive(Serialize)]
struct ToolCallBody<'a> {
    tool: &'a str,
    #[serde(rename = "callId")]
    call_id: &'a str,
    arguments: &'a Value,
    execution: &'a ExecutionScope,
}

impl HostClient {
    pub fn new(timeout: Duration, allow_private: bool) -> Self {
        Self::with_connections(timeout, allow_private, &HostConnections::default())
    }

    pub fn with_connections(timeout: Duration, allow_private: bool, connections: &HostConnections) -> Self {
        let tls = host_tls(connections);
        let per = connections.calls_per_connection;
        let any = Arc::new(host_lanes(timeout, false, tls.clone(), per));
        let public = Arc::new(host_lanes(timeout, true, tls, per));
        let mcp_tls =
            (!connections.extra_roots.is_empty()).then(|| tls_connector(false, &connections.extra_roots)).flatten();
        Self { public, any, mcp_tls, allow_private, timeout }
    }

    /// A client for MCP servers ([`tool_http_client`]), trusting the
    /// configured CA certificates as Remote Tools calls do.
    pub fn mcp_http_client(&self, public_only: bool) -> reqwest::Client {
        match &self.mcp_tls {
            Some(tls) => tool_client(preconfigured(Some(tls)).http1_only(), self.timeout, public_only),
            None => tool_http_client(self.timeout, public_only),
        }
    }

    /// A client for one call to `target`, and its seat in its lane (held
    /// until the answer is read).
    fn client_for(&self, target: &HostTarget) -> Result<(reqwest::Client, Seat), HostError> {
        if target.trusted || self.allow_private {
            return Ok(self.any.take());
        }
        if let Some(ip) = private_literal(&target.base_url) {
            return Err(HostError::Unreachable(format!("{ip} is a private address")));
        }
        Ok(self.public.take())
    }

    /// `GET /tools`, filtered by the allowlist (empty = all).
    pub async fn list_tools(
        &self,
        target: &HostTarget,
        scope: &ExecutionScope,
        allowed: &[String],
    ) -> Result<Vec<ToolSpec>, HostError> {
        let body = self.get(target, "tools", scope).await?;
        let tools = body
            .get("tools")
            .and_then(Value::as_array)
            .ok_or_else(|| HostError::Invalid("GET /tools has no `tools` array".into()))?;
        let mut out: Vec<ToolSpec> = Vec::new();
        for raw in tools {
            if raw.get("inputSchema").is_some_and(|schema| crate::schema::too_large(schema).is_some()) {
                let name = raw.get("name").and_then(Value::as_str).unwrap_or_default();
                tracing::warn!(tool = %name.chars().take(64).collect::<String>(), "skipping a tool whose inputSchema is too large or deep");
                continue;
            }
            // A malformed tool is skipped (and logged), not fatal to the turn.
            match serde_json::from_value::<ToolSpec>(raw.clone()) {
                Ok(tool) if valid_tool_name(&tool.name) && !out.iter().any(|t| t.name == tool.name) => {
                    if allowed.is_empty() || allowed.contains(&tool.name) {
                        out.push(tool);
                    }
                }
                Ok(tool) => {
                    tracing::warn!(tool = %tool.name.chars().take(64).collect::<String>(), "skipping a tool with an unusable or duplicate name")
                }
                Err(error) => tracing::warn!(%error, "skipping a malformed tool from GET /tools"),
            }
        }
        Ok(out)
    }

    /// `GET /context`: any JSON object; the engine treats it as untrusted data.
    pub async fn context(&self, target: &HostTarget, scope: &ExecutionScope) -> Result<Value, HostError> {
        let body = self.get(target, "context", scope).await?;
        if !body.is_object() {
            return Err(HostError::Invalid("GET /context is not a JSON object".into()));
        }
        Ok(body)
    }

    /// `POST /tools/preview` → the preview text.
    pub async fn preview(
        &self,
        target: &HostTarget,
        tool: &str,
        call_id: &str,
        arguments: &Value,
        scope: &ExecutionScope,
    ) -> Result<String, HostError> {
        let body = self.post(target, "tools/preview", tool, call_id, arguments, scope).await?;
        body.get("preview")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| HostError::Invalid("preview answer has no `preview` string".into()))
    }

    /// `POST /tools/execute` → `output`.
    pub async fn execute(
        &self,
        target: &HostTarget,
        tool: &str,
        call_id: &str,
        arguments: &Value,
        scope: &ExecutionScope,
    ) -> Result<Value, HostError> {
        let mut body = self.post(target, "tools/execute", tool, call_id, arguments, scope).await?;
        body.get_mut("output")
            .map(Value::take)
            .ok_or_else(|| HostError::Invalid("execute answer has no `output`".into()))
    }

    async fn get(&self, target: &HostTarget, path: &'static str, scope: &ExecutionScope) -> Result<Value, HostError> {
        let url = with_scope(endpoint(&target.base_url, path), scope);
        let (client, _seat) = self.client_for(target)?;
        self.send(path, client.get(url).bearer_auth(target.secret.expose()).send()).await
    }

    async fn post(
        &self,
        target: &HostTarget,
        path: &'static str,
        tool: &str,
        call_id: &str,
        arguments: &Value,
        scope: &ExecutionScope,
    ) -> Result<Value, HostError> {
        let url = endpoint(&target.base_url, path);
        let body = ToolCallBody { tool, call_id, arguments, execution: scope };
        let (client, _seat) = self.client_for(target)?;
        self.send(path, client.post(url).bearer_auth(target.secret.expose()).json(&body).send()).await
    }

    /// A call as it came back, for the host checker: `GET {path}` with the
    /// scope in the query (`bearer` None sends no `Authorization`), or
    /// `POST {path}` with `body`. Same client, resolver, timeout and size
    /// cap as every other call; redirects are not followed.
    pub async fn raw(
        &self,
        target: &HostTarget,
        path: &str,
        scope: &ExecutionScope,
        bearer: Option<&str>,
        body: Option<&Value>,
    ) -> Result<RawAnswer, HostError> {
        let url = endpoint(&target.base_url, path);
        let (client, _seat) = self.client_for(target)?;
        let request = match body {
            Some(body) => client.post(url).json(body),
            None => client.get(with_scope(url, scope)),
        };
        let request = match bearer {
            Some(bearer) => request.bearer_auth(bearer),
            None => request,
        };
        self.fetch(request.send()).await
    }

    /// The time a call may take.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Sends a request to the host's `endpoint`, timed (metrics).
    ///
    /// These take the request already sent (`RequestBuilder::send`, 16
    /// bytes) rather than its builder (272): each async layer keeps room for
    /// its arguments as long as it runs, and a turn waiting on a host holds
    /// all of them while it waits (issue #47: memory per open stream).
    async fn send(&self, endpoint: &'static str, request: impl Sent) -> Result<Value, HostError> {
        let started = std::time::Instant::now();
        let answer = self.answer(request).await;
        crate::metrics::host_request(endpoint, started.elapsed(), answer.is_ok());
        answer
    }

    async fn answer(&self, request: impl Sent) -> Result<Value, HostError> {
        let answer = self.fetch(request).await?;
        if !answer.ok() {
            let body = answer.json();
            let message = body
                .as_ref()
                .and_then(|v| v.get("error").and_then(Value::as_str).map(|s| s.chars().take(300).collect()))
                .unwrap_or_else(|| "(no error message)".to_owned());
            let stale = body.as_ref().and_then(|v| v.get("stale")) == Some(&Value::Bool(true));
            return Err(match answer.status {
                409 if stale => HostError::Stale(message),
                401 => HostError::Unauthorized(message),
                400 => HostError::BadRequest(message),
                403 => HostError::Forbidden(message),
                404 => HostError::NotFound(message),
                code => HostError::Failed { status: code, message },
            });
        }
        answer.json().ok_or_else(|| HostError::Invalid("answer is not JSON".into()))
    }

    /// Waits for `request`'s answer and reads it whole (capped), within the timeout.
    async fn fetch(&self, request: impl Sent) -> Result<RawAnswer, HostError> {
        let started = std::time::Instant::now();
        let call = async {
            let response = request.await.map_err(|e| HostError::Unreachable(error_chain(&e)))?;
            let status = response.status().as_u16();
            let location =
                response.headers().get(reqwest::header::LOCATION).and_then(|v| v.to_str().ok()).map(str::to_owned);
            let body = read_capped(response).await?;
            Ok(RawAnswer { status, body, location, elapsed: started.elapsed() })
        };
        tokio::time::timeout(self.timeout, call).await.map_err(|_| HostError::Timeout(self.timeout))?
    }
}

/// A request on its way to the host (what `RequestBuilder::send` returns).
trait Sent: std::future::Future<Output = reqwest::Result<reqwest::Response>> + Send {}
impl<F: std::future::Future<Output = reqwest::Result<reqwest::Response>> + Send> Sent for F {}

/// True unless `ip` is a global unicast address a tool host may have.
/// Every special-purpose range of the IANA registries is refused —
/// loopback, private, shared (CGNAT), link-local, documentation,
/// benchmarking, IETF protocol assignments, reserved (`240.0.0.0/4`),
/// multicast, site-local (`fec0::/10`), unique-local — and cloud metadata
/// addresses. An IPv4 address carried in IPv6 (mapped `::ffff:a.b.c.d`,
/// compatible `::a.b.c.d`, NAT64 `64:ff9b::/96`, 6to4 `2002::/16`) is judged
/// as that IPv4 address; Teredo and local-use NAT64 are refused whole.
pub fn is_private(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => !is_global_v4(v4),
        IpAddr::V6(v6) => match embedded_v4(v6) {
            Some(v4) => !is_global_v4(v4),
            None => !is_global_v6(v6),
        },
    }
}

/// Metadata services on addresses no special range covers (Azure's wire server).
const METADATA_V4: &[[u8; 4]] = &[[168, 63, 129, 16]];

fn is_global_v4(ip: std::net::Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    let special = a == 0                                  // "this network" 0.0.0.0/8
        || a == 10                                         // private
        || a == 127                                        // loopback
        || (a == 100 && (64..128).contains(&b))            // shared address space (CGNAT) 100.64.0.0/10
        || (a == 169 && b == 254)                          // link-local, and the usual metadata 169.254.169.254
        || (a == 172 && (16..32).contains(&b))             // private
        || (a == 192 && b == 0 && c == 0)                  // IETF protocol assignments 192.0.0.0/24
        || (a == 192 && b == 0 && c == 2)                  // documentation TEST-NET-1
        || (a == 192 && b == 88 && c == 99)                // 6to4 relay anycast
        || (a == 192 && b == 168)                          // private
        || (a == 198 && (18..20).contains(&b))             // benchmarking 198.18.0.0/15
        || (a == 198 && b == 51 && c == 100)               // documentation TEST-NET-2
        || (a == 203 && b == 0 && c == 113)                // documentation TEST-NET-3
        || a >= 224; // multicast 224.0.0.0/4, reserved 240.0.0.0/4, broadcast
    !special && !METADATA_V4.contains(&ip.octets())
}

/// The IPv4 address an IPv6 address carries, in any of the forms that
/// reach an IPv4 host.
fn embedded_v4(ip: std::net::Ipv6Addr) -> Option<std::net::Ipv4Addr> {
    let o = ip.octets();
    let seg = ip.segments();
    let last = || std::net::Ipv4Addr::new(o[12], o[13], o[14], o[15]);
    if let Some(v4) = ip.to_ipv4_mapped() {
        return Some(v4);
    }
    if seg[..6].iter().all(|s| *s == 0) {
        return Some(last()); // IPv4-compatible ::a.b.c.d (and :: and ::1, judged as 0.0.0.x)
    }
    if seg[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        return Some(last()); // NAT64 well-known prefix
    }
    if seg[0] == 0x2002 {
        return Some(std::net::Ipv4Addr::new(o[2], o[3], o[4], o[5])); // 6to4
    }
    None
}

fn is_global_v6(ip: std::net::Ipv6Addr) -> bool {
    let seg = ip.segments();
    let global_unicast = (seg[0] & 0xe000) == 0x2000; // 2000::/3; everything else is special
    // 2001::/23: IETF protocol assignments (Teredo, benchmarking, ORCHID);
    // 2001:db8::/32 and 3fff::/20: documentation; 64:ff9b:1::/48: local-use NAT64.
    let special = (seg[0] == 0x2001 && (seg[1] < 0x0200 || seg[1] == 0x0db8))
        || (seg[0] & 0xfff0) == 0x3ff0
        || (seg[0] == 0x64 && seg[1] == 0xff9b && seg[2] == 1);
    global_unicast && !special
}

/// Resolves host names to their public addresses only.
pub struct PublicOnlyResolver;

/// What [`PublicOnlyResolver`]'s refusal says (callers recognise it).
pub const PRIVATE_REFUSED: &str = "resolves only to private addresses";

impl Resolve for PublicOnlyResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let addrs: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.filter(|a| !is_private(a.ip())).collect();
            if addrs.is_empty() {
                return Err(format!("{host} {PRIVATE_REFUSED}").into());
            }
            let addrs: Addrs = Box::new(addrs.into_iter());
            Ok(addrs)
        })
    }
}

/// Tool names go to the model as function names: `^[A-Za-z0-9_-]{1,64}$`.
pub fn valid_tool_name(name: &str) -> bool {
    (1..=64).contains(&name.len()) && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// The execution scope as a GET's query (remote-tools-contract.md).
fn with_scope(mut url: Url, scope: &ExecutionScope) -> Url {
    {
        let mut q = url.query_pairs_mut();
        q.append_pair("workspaceId", &scope.workspace_id);
        q.append_pair("externalUserId", &scope.external_user_id);
        for p in &scope.permissions {
            q.append_pair("permissions", p);
        }
        q.append_pair("requestId", &scope.request_id);
    }
    url
}

/// `base_url` is a prefix: paths are appended to it.
fn endpoint(base: &Url, path: &str) -> Url {
    let mut url = base.clone();
    let joined = format!("{}/{}", base.path().trim_end_matches('/'), path);
    url.set_path(&joined);
    url.set_query(None);
    url
}

async fn read_capped(response: reqwest::Response) -> Result<Vec<u8>, HostError> {
    body_capped(response).await.map_err(|broken| match broken {
        Some(cause) => HostError::Unreachable(cause),
        None => HostError::Invalid(format!("answer is larger than {MAX_RESPONSE_BYTES} bytes")),
    })
}

/// A tool host's answer body, of at most [`MAX_RESPONSE_BYTES`]; else
/// `Err(None)` when it is larger, `Err(Some(cause))` when it broke off.
pub async fn body_capped(response: reqwest::Response) -> Result<Vec<u8>, Option<String>> {
    if response.content_length().is_some_and(|n| n as usize > MAX_RESPONSE_BYTES) {
        return Err(None);
    }
    let mut body = Vec::new();
    let mut stream = response.bytes_stream();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| Some(error_chain(&e)))?;
        if body.len() + chunk.len() > MAX_RESPONSE_BYTES {
            return Err(None);
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// The error and its causes, for the log (the URL carries no secret: the
/// bearer travels in a header).
/// A private IP address written in `url` itself: the resolver never sees
/// an IP literal, so a client for public hosts checks it before connecting.
pub fn private_literal(url: &Url) -> Option<IpAddr> {
    let literal = match url.host() {
        Some(url::Host::Ipv4(ip)) => Some(IpAddr::V4(ip)),
        Some(url::Host::Ipv6(ip)) => Some(IpAddr::V6(ip)),
        _ => None,
    };
    literal.filter(|ip| is_private(*ip))
}

/// An error and its causes, for logs (reqwest's errors never hold a secret).
pub fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_appended_to_the_base_url_prefix() {
        let base = Url::parse("https://app.example.com/internal/assistant").unwrap();
        assert_eq!(endpoint(&base, "tools").as_str(), "https://app.example.com/internal/assistant/tools");
        let base = Url::parse("https://app.example.com/internal/assistant/?x=1").unwrap();
        assert_eq!(
            endpoint(&base, "tools/execute").as_str(),
            "https://app.example.com/internal/assistant/tools/execute"
        );
    }

    #[test]
    fn a_tools_schema_is_kept_as_compact_text_and_reads_back_whole() {
        let listed = serde_json::json!({"name": "lookup", "verb": "get", "inputSchema":
            {"type": "object", "properties": {"q": {"type": "string", "description": "what"}}, "required": ["q"]}});
        let tool: ToolSpec = serde_json::from_value(listed.clone()).unwrap();
        assert_eq!(tool.input_schema.value(), listed["inputSchema"]);
        assert_eq!(
            &*tool.input_schema.0,
            r#"{"properties":{"q":{"description":"what","type":"string"}},"required":["q"],"type":"object"}"#
        );
        assert_eq!(serde_json::to_value(&tool).unwrap()["inputSchema"], listed["inputSchema"]);
        let bare: ToolSpec = serde_json::from_value(serde_json::json!({"name": "t", "verb": "get"})).unwrap();
        assert_eq!(bare.input_schema.value(), serde_json::json!({"type": "object", "properties": {}}));
    }

    #[test]
    fn tool_names_are_limited_to_what_models_accept() {
        assert!(valid_tool_name("show_menu"));
        assert!(!valid_tool_name(""));
        assert!(!valid_tool_name("drop table"));
        assert!(!valid_tool_name(&"a".repeat(65)));
    }

    #[test]
    fn private_addresses_are_recognised_including_mapped_ipv4() {
        for ip in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "0.0.0.0",
            "100.64.0.1",
            "224.0.0.1",
            "::1",
            "::",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
            "fd00::1",
            "fe80::1",
        ] {
            assert!(is_private(ip.parse().unwrap()), "{ip}");
        }
        for ip in ["93.184.216.34", "2606:4700::1111", "::ffff:93.184.216.34"] {
            assert!(!is_private(ip.parse().unwrap()), "{ip}");
        }
    }

    /// Every special-purpose range, by a address inside it; then global
    /// addresses, also carried in IPv6, that stay allowed.
    #[test]
    fn only_global_unicast_passes_with_embedded_ipv4_unwrapped() {
        let refused = [
            ("this network 0.0.0.0/8", "0.1.2.3"),
            ("private 10/8", "10.1.2.3"),
            ("shared CGNAT 100.64/10", "100.127.255.254"),
            ("loopback 127/8", "127.9.9.9"),
            ("link-local 169.254/16 (metadata)", "169.254.169.254"),
            ("private 172.16/12", "172.31.0.1"),
            ("IETF protocol assignments 192.0.0.0/24", "192.0.0.170"),
            ("documentation 192.0.2.0/24", "192.0.2.1"),
            ("6to4 relay anycast", "192.88.99.1"),
            ("private 192.168/16", "192.168.1.1"),
            ("benchmarking 198.18/15", "198.19.255.1"),
            ("documentation 198.51.100.0/24", "198.51.100.7"),
            ("documentation 203.0.113.0/24", "203.0.113.9"),
            ("multicast 224/4", "239.1.1.1"),
            ("reserved 240/4", "250.1.2.3"),
            ("broadcast", "255.255.255.255"),
            ("Azure wire server", "168.63.129.16"),
            ("IPv6 unspecified", "::"),
            ("IPv6 loopback", "::1"),
            ("IPv4-mapped loopback", "::ffff:127.0.0.1"),
            ("IPv4-compatible private", "::10.0.0.1"),
            ("IPv4-compatible metadata", "::169.254.169.254"),
            ("NAT64 loopback", "64:ff9b::7f00:1"),
            ("NAT64 private", "64:ff9b::a00:1"),
            ("local-use NAT64 64:ff9b:1::/48", "64:ff9b:1::808:808"),
            ("6to4 of loopback", "2002:7f00:1::1"),
            ("6to4 of private", "2002:c0a8:101::1"),
            ("Teredo 2001::/32", "2001:0:4136:e378:8000:63bf:3fff:fdd2"),
            ("benchmarking 2001:2::/48", "2001:2::1"),
            ("documentation 2001:db8::/32", "2001:db8::1"),
            ("documentation 3fff::/20", "3fff:0:1::1"),
            ("discard-only 100::/64", "100::1"),
            ("unique local fc00::/7", "fd00:ec2::254"),
            ("site-local fec0::/10", "fec0::1"),
            ("link-local fe80::/10", "fe80::1"),
            ("multicast ff00::/8", "ff02::1"),
        ];
        for (range, ip) in refused {
            assert!(is_private(ip.parse().unwrap()), "{range}: {ip} must be refused");
        }
        for ip in [
            "8.8.8.8",
            "1.1.1.1",
            "2606:4700:4700::1111",
            "2a00:1450:4001::1",
            "::ffff:8.8.8.8",
            "64:ff9b::808:808",
            "2002:808:808::1",
        ] {
            assert!(!is_private(ip.parse().unwrap()), "{ip} is global");
        }
    }

    #[tokio::test]
    async fn a_private_literal_address_is_refused_before_any_request() {
        let client = HostClient::new(Duration::from_secs(1), false);
        for base in ["http://127.0.0.1:9/x", "http://[::ffff:7f00:1]:9/x", "http://169.254.169.254/latest"] {
            let target = HostTarget { base_url: Url::parse(base).unwrap(), secret: Secret::new("s"), trusted: false };
            let scope = ExecutionScope {
                workspace_id: "w".into(),
                external_user_id: "u".into(),
                permissions: vec![],
                request_id: "r".into(),
            };
            let error = client.context(&target, &scope).await.unwrap_err();
            assert!(matches!(error, HostError::Unreachable(ref m) if m.contains("private")), "{base}: {error}");
        }
    }

    #[tokio::test]
    async fn a_name_that_resolves_to_loopback_is_refused() {
        let client = HostClient::new(Duration::from_secs(2), false);
        let target = HostTarget {
            base_url: Url::parse("http://localhost:9/x").unwrap(),
            secret: Secret::new("s"),
            trusted: false,
        };
        let scope = ExecutionScope {
            workspace_id: "w".into(),
            external_user_id: "u".into(),
            permissions: vec![],
            request_id: "r".into(),
        };
        let error = client.context(&target, &scope).await.unwrap_err();
        assert!(format!("{error}").contains("private"), "{error}");
    }

    // That the host's text never reaches the user or the model is proven
    // end to end (tests/api/limits.rs, chat.rs): `user_message` is static.
    #[test]
    fn the_log_keeps_the_hosts_text_and_each_failure_has_its_own_code() {
        let e = HostError::Failed { status: 500, message: "SELECT * FROM secrets failed".into() };
        assert!(e.to_string().contains("SELECT"), "the log keeps it");
        let all = [
            HostError::Unauthorized(String::new()),
            HostError::BadRequest(String::new()),
            HostError::Forbidden(String::new()),
            HostError::NotFound(String::new()),
            HostError::Failed { status: 500, message: String::new() },
            HostError::Invalid(String::new()),
            HostError::Stale(String::new()),
            HostError::Timeout(Duration::from_secs(1)),
            HostError::Unreachable(String::new()),
        ];
        let codes: std::collections::HashSet<&str> = all.iter().map(HostError::code).collect();
        assert_eq!(codes.len(), all.len(), "the model tells failures apart by code");
    }
}
