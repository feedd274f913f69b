//! A workspace's tool sources behind one interface: list the tools, run a
//! read, stage a change, execute a staged change. A workspace may connect
//! its Remote Tools host and any number of MCP servers, each an
//! integration with its own name; the engine sees [`Source`]s and
//! [`Sources`] and never learns which kind it talks to.
//!
//! - Remote Tools (remote-tools-contract.md): `GET /tools`, a read is
//!   `POST /tools/execute` of a `get`, a change is staged with the host's
//!   `POST /tools/preview` and executed with `POST /tools/execute`.
//! - MCP: `tools/list` (kept per connection until the server says it
//!   changed), a read and an execution are one `tools/call` each, never
//!   retried; MCP has no preview, so staging shows the tool's title and the
//!   frozen arguments, readable, and calls nothing. Every call carries the
//!   caller's scope in `_meta` under [`SCOPE_META_KEY`].
//!
//! The model sees one list of tools: names stay as their source gives them
//! while unique, and become `<integration>__<tool>` only where two sources
//! offer the same name ([`offer`]); each tool keeps its origin, so a call
//! goes back to the source and name it came from.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};
use tokio::sync::mpsc::UnboundedSender;
use url::Url;
use widget::wire::Verb;

use crate::host::{ExecutionScope, HostClient, HostError, HostTarget, ToolOrigin, ToolSpec};
use crate::mcp::classify::{Hints, verb};
pub use crate::mcp::client::{CallEvent, ElicitAnswer, Elicitation};
use crate::mcp::client::{Endpoint, McpError};
use crate::mcp::content::{Outcome, app_outcome, outcome};
use crate::mcp::pool::{Connection, Connections, Key};

/// The `_meta` key under which every MCP `tools/call` carries who it acts
/// for: `{"workspaceId", "externalUserId", "permissions", "requestId"}`, as
/// the Remote Tools contract's execution scope (docs/mcp.md).
pub const SCOPE_META_KEY: &str = "context-assistant/execution";

/// Longest tool name taken from an MCP server (the spec's own limit).
const MAX_MCP_TOOL_NAME: usize = 128;

/// One connected integration, its secrets opened.
#[derive(Debug)]
pub struct Source {
    pub workspace_id: String,
    /// The integration's name (`generic-rest`, or an MCP server's).
    pub name: String,
    /// Where it lives: an action runs only on the URL that previewed it.
    pub url: String,
    /// Changes on every (re)connection: likewise.
    pub version: i64,
    /// The tools it may offer (its own names); empty: all of them.
    pub allowed_tools: Vec<String>,
    pub kind: SourceKind,
}

/// How a source is reached.
#[derive(Debug)]
pub enum SourceKind {
    Remote(HostTarget),
    Mcp(McpServer),
}

impl Source {
    /// Whether a call tells anything while it runs (an MCP server's
    /// progress and requests for input); a Remote Tools host never does.
    pub fn tells_while_running(&self) -> bool {
        matches!(self.kind, SourceKind::Mcp(_))
    }
}

/// An MCP server as connected.
pub struct McpServer {
    pub url: Url,
    /// Sent with every request (its bearer token, say); never logged.
    pub headers: Vec<(String, String)>,
    /// Its annotations decide which tools run by themselves.
    pub trust_annotations: bool,
    /// The host's own verb per tool, which wins.
    pub verbs: BTreeMap<String, Verb>,
}

impl std::fmt::Debug for McpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.headers.iter().map(|(name, _)| name.as_str()).collect();
        f.debug_struct("McpServer")
            .field("url", &self.url.as_str())
            .field("headers", &names)
            .field("trust_annotations", &self.trust_annotations)
            .field("verbs", &self.verbs)
            .finish()
    }
}

impl Source {
    /// True for the Remote Tools host (which alone has a context).
    pub fn is_remote(&self) -> bool {
        matches!(self.kind, SourceKind::Remote(_))
    }
}

/// What a read comes to: the output the engine takes (what the model
/// reads, and `display`), and for an MCP App's tool its whole result,
/// which only the app sees.
#[derive(Debug)]
pub struct Read {
    pub output: Value,
    pub app_result: Option<Value>,
}

/// The clients every source is reached with, and the MCP connections.
#[derive(Clone)]
pub struct Sources {
    host: HostClient,
    connections: Connections,
    /// For MCP servers that must be public (the resolver returns only
    /// public addresses), and for any when private ones are allowed.
    public_http: reqwest::Client,
    any_http: reqwest::Client,
    allow_private: bool,
    timeout: Duration,
}

impl Sources {
    pub fn new(host: HostClient, allow_private: bool) -> Self {
        let timeout = host.timeout();
        // Pooled, as Remote Tools hosts are: a read on a kept connection
        // skips a TCP (and TLS) handshake. A server that leaves Nagle's
        // algorithm on (axum::serve's default; Node's, Python's asyncio and
        // Go's servers turn it off) holds its answer's last write until our
        // delayed ACK, 40 ms, on a kept connection — its own choice to fix
        // (docs/benchmarks.md, "A read over MCP").
        let any_http = host.mcp_http_client(false);
        let public_http = host.mcp_http_client(true);
        Self { host, connections: Connections::default(), public_http, any_http, allow_private, timeout }
    }

    /// The Remote Tools client (the host checker, connecting).
    pub fn host(&self) -> &HostClient {
        &self.host
    }

    /// How an MCP server is dialled: the public-only client unless private
    /// hosts are allowed; a private address literal is refused at once.
    pub fn endpoint(&self, server: &McpServer) -> Result<Endpoint, McpError> {
        let http = self.http_for(server)?;
        Ok(self.endpoint_with(server, http.clone()))
    }

    /// Our client for `server`: the public-only one unless private hosts
    /// are allowed (an address written in its URL is checked here).
    fn http_for(&self, server: &McpServer) -> Result<&reqwest::Client, McpError> {
        if self.allow_private {
            return Ok(&self.any_http);
        }
        if let Some(ip) = crate::host::private_literal(&server.url) {
            return Err(McpError::Unreachable(format!("{ip} is a private address")));
        }
        Ok(&self.public_http)
    }

    fn endpoint_with(&self, server: &McpServer, http: reqwest::Client) -> Endpoint {
        Endpoint { url: server.url.clone(), headers: server.headers.clone(), http, timeout: self.timeout }
    }

    /// Connects to an MCP server once (not through the kept connections:
    /// nothing is stored yet), lists and classifies its tools within
    /// `allowed` (empty: all), and writes the connect report; the
    /// connection is closed after. The connect and check endpoints and
    /// `context-assistant check-host --mcp` share it.
    pub async fn inspect(
        &self,
        name: &str,
        server: &McpServer,
        allowed: &[String],
        workspace_id: &str,
    ) -> Result<(Vec<ToolSpec>, crate::checker::Report), McpError> {
        let endpoint = self.endpoint(server)?;
        let timeout = endpoint.timeout;
        let started = std::time::Instant::now();
        let connection = crate::mcp::client::connect(endpoint).await?;
        let handshake = started.elapsed();
        let started = std::time::Instant::now();
        let listed = connection.tools().await;
        let listing = started.elapsed();
        let listed = match listed {
            Ok(listed) => listed,
            Err(error) => {
                connection.close().await;
                return Err(error);
            }
        };
        let offered = |t: &Value| {
            allowed.is_empty() || t.get("name").and_then(Value::as_str).is_some_and(|n| allowed.iter().any(|a| a == n))
        };
        let listed: Vec<Value> = listed.into_iter().filter(offered).collect();
        let tools = mcp_tools(name, server, &listed);
        let scope = ExecutionScope {
            workspace_id: workspace_id.to_owned(),
            external_user_id: crate::mcp::check::CHECK_USER.into(),
            permissions: Vec::new(),
            request_id: crate::ids::new_id("req"),
        };
        let seen = crate::mcp::check::Seen {
            server: &connection,
            handshake,
            listing,
            listed: &listed,
            tools: &tools,
            trust_annotations: server.trust_annotations,
            timeout,
            meta: scope_meta(&scope),
        };
        let report = crate::mcp::check::report(seen).await;
        connection.close().await;
        Ok((tools, report))
    }

    /// Closes the MCP connections no turn used for `idle`, every so often.
    pub fn spawn_idle_closing(&self, idle: Duration) {
        self.connections.spawn_idle_closing(idle);
    }

    /// How many MCP connections are open in this process.
    pub fn open_mcp_connections(&self) -> usize {
        self.connections.open()
    }

    /// Closes an integration's MCP connections (it was replaced or removed).
    pub fn forget(&self, workspace_id: &str, name: &str) {
        self.connections.forget(workspace_id, name);
    }

    async fn connection(
        &self,
        source: &Source,
        server: &McpServer,
    ) -> Result<Arc<crate::mcp::pool::Connection>, McpError> {
        let key = Key { workspace_id: source.workspace_id.clone(), name: source.name.clone(), version: source.version };
        // Made only when a connection is opened.
        let http = self.http_for(server)?;
        self.connections.get(&key, || self.endpoint_with(server, http.clone())).await
    }

    /// The tools the source offers this caller, within its allowlist, each
    /// with its origin (under its own name; [`offer`] makes names unique).
    /// An MCP server's are the ones kept since its last `list_changed`.
    pub async fn tools(&self, source: &Source, scope: &ExecutionScope) -> Result<Vec<ToolSpec>, HostError> {
        self.list(source, scope, false).await
    }

    /// The same, listed now (an Apply checks its tool against these, so a
    /// server that redefined a tool without saying so is caught).
    pub async fn current_tools(&self, source: &Source, scope: &ExecutionScope) -> Result<Vec<ToolSpec>, HostError> {
        self.list(source, scope, true).await
    }

    async fn list(&self, source: &Source, scope: &ExecutionScope, fresh: bool) -> Result<Vec<ToolSpec>, HostError> {
        let tools = match &source.kind {
            // `GET /tools` is filtered by the allowlist as it is read.
            SourceKind::Remote(target) => {
                let mut tools = self.host.list_tools(target, scope, &source.allowed_tools).await?;
                for tool in &mut tools {
                    let definition = serde_json::to_value(&*tool).unwrap_or_default();
                    tool.origin = origin(&source.name, &tool.name, None, &definition);
                }
                tools
            }
            SourceKind::Mcp(server) => {
                let connection = self.connection(source, server).await.map_err(into_host_error)?;
                let listed = if fresh { connection.fresh_tools().await } else { connection.tools().await };
                let listed = listed.map_err(into_host_error)?;
                let mut tools = mcp_tools(&source.name, server, &listed);
                tools.retain(|t| source.allowed_tools.is_empty() || source.allowed_tools.contains(&t.origin.name));
                tools
            }
        };
        Ok(tools)
    }

    /// The UI resource of an MCP App tool (its `ToolOrigin::app`), read
    /// through the server and kept per integration and version; refused
    /// for anything but a `ui://` URI of an MCP server.
    pub async fn app_resource(
        &self,
        source: &Source,
        uri: &str,
    ) -> Result<Arc<crate::mcp::apps::AppResource>, HostError> {
        if !crate::mcp::apps::is_ui_uri(uri) {
            return Err(HostError::Invalid("not a ui:// resource".into()));
        }
        let connection = self.mcp_connection(source, "UI resources").await?;
        connection.app(uri).await.map_err(into_host_error)
    }

    /// The connection to `source`, an MCP server; a Remote Tools host has
    /// no `what` (an app's resources, its tools, its UI).
    async fn mcp_connection(&self, source: &Source, what: &str) -> Result<Arc<Connection>, HostError> {
        let SourceKind::Mcp(server) = &source.kind else {
            return Err(HostError::Invalid(format!("a Remote Tools host has no {what}")));
        };
        self.connection(source, server).await.map_err(into_host_error)
    }

    /// The source's context (`GET /context`): only a Remote Tools host has one.
    pub async fn context(&self, source: &Source, scope: &ExecutionScope) -> Option<Result<Value, HostError>> {
        match &source.kind {
            SourceKind::Remote(target) => Some(self.host.context(target, scope).await),
            SourceKind::Mcp(_) => None,
        }
    }

    /// Runs a read (`get`) tool: its output. What an MCP server tells
    /// while it runs (progress, a request for the user's input) goes to
    /// `events`; a Remote Tools host tells nothing.
    pub async fn read(
        &self,
        source: &Source,
        tool: &ToolSpec,
        call_id: &str,
        arguments: &Value,
        scope: &ExecutionScope,
        events: Option<UnboundedSender<CallEvent>>,
    ) -> Result<Read, HostError> {
        self.call(source, &tool.origin.name, call_id, arguments, scope, events).await
    }

    /// Stages a change: what the user is shown before Apply. A Remote Tools
    /// host previews it; an MCP server is not called (MCP has no preview):
    /// the tool's title and the frozen arguments, readable.
    pub async fn stage(
        &self,
        source: &Source,
        tool: &ToolSpec,
        call_id: &str,
        arguments: &Value,
        scope: &ExecutionScope,
    ) -> Result<String, HostError> {
        match &source.kind {
            SourceKind::Remote(target) => self.host.preview(target, &tool.origin.name, call_id, arguments, scope).await,
            SourceKind::Mcp(_) => Ok(readable_call(tool, arguments)),
        }
    }

    /// Executes a staged change once, with exactly its frozen arguments:
    /// never retried here (the caller's `requestId` is the action's id).
    pub async fn execute(
        &self,
        source: &Source,
        tool: &str,
        call_id: &str,
        arguments: &Value,
        scope: &ExecutionScope,
    ) -> Result<Value, HostError> {
        self.call(source, tool, call_id, arguments, scope, None).await.map(|read| read.output)
    }

    /// An MCP server's tools as it lists them (kept per connection).
    pub async fn listed(&self, source: &Source) -> Result<Arc<Vec<Value>>, HostError> {
        if source.is_remote() {
            return Ok(Arc::new(Vec::new()));
        }
        self.mcp_connection(source, "MCP tools").await?.tools().await.map_err(into_host_error)
    }

    /// The tools an MCP App of `source` may call (MCP Apps' `visibility`
    /// includes `app`), within the workspace's allowlist, classified like
    /// the model's.
    pub async fn app_tools(&self, source: &Source) -> Result<Vec<ToolSpec>, HostError> {
        let SourceKind::Mcp(server) = &source.kind else { return Ok(Vec::new()) };
        let listed = self.listed(source).await?;
        let for_app: Vec<Value> = listed.iter().filter(|t| crate::mcp::apps::visible_to_app(t)).cloned().collect();
        let mut tools = listing(&source.name, server, &for_app, false);
        tools.retain(|t| source.allowed_tools.is_empty() || source.allowed_tools.contains(&t.origin.name));
        Ok(tools)
    }

    /// Calls a tool of `source` for an MCP App: its whole `CallToolResult`
    /// (an `isError` result included), which goes to the app alone.
    pub async fn call_for_app(
        &self,
        source: &Source,
        tool: &str,
        arguments: &Value,
        scope: &ExecutionScope,
    ) -> Result<Value, HostError> {
        let started = std::time::Instant::now();
        let connection = self.mcp_connection(source, "apps").await?;
        let arguments = arguments.as_object().cloned().unwrap_or_default();
        let result = connection.server.call(tool, arguments, scope_meta(scope)).await;
        crate::metrics::host_request("mcp/tools/call", started.elapsed(), result.is_ok());
        Ok(crate::mcp::apps::result_for_app(&result.map_err(into_host_error)?))
    }

    /// Reads a resource of `source` for an MCP App (`resources/read`): the
    /// server's answer as it gave it.
    pub async fn read_for_app(&self, source: &Source, uri: &str) -> Result<Value, HostError> {
        let started = std::time::Instant::now();
        let connection = self.mcp_connection(source, "resources").await?;
        let result = connection.server.read_resource(uri).await;
        crate::metrics::host_request("mcp/resources/read", started.elapsed(), result.is_ok());
        result.map_err(into_host_error)
    }

    async fn call(
        &self,
        source: &Source,
        tool: &str,
        call_id: &str,
        arguments: &Value,
        scope: &ExecutionScope,
        events: Option<UnboundedSender<CallEvent>>,
    ) -> Result<Read, HostError> {
        match &source.kind {
            SourceKind::Remote(target) => {
                let output = self.host.execute(target, tool, call_id, arguments, scope).await?;
                Ok(Read { output, app_result: None })
            }
            // Boxed: an MCP call's future is several kilobytes that a Remote
            // Tools call, waiting, need not carry.
            SourceKind::Mcp(server) => Box::pin(self.call_mcp(source, server, tool, arguments, scope, events)).await,
        }
    }

    /// A call to an MCP server's tool, its progress and questions to `events`.
    async fn call_mcp(
        &self,
        source: &Source,
        server: &McpServer,
        tool: &str,
        arguments: &Value,
        scope: &ExecutionScope,
        events: Option<UnboundedSender<CallEvent>>,
    ) -> Result<Read, HostError> {
        let started = std::time::Instant::now();
        let connection = self.connection(source, server).await.map_err(into_host_error)?;
        let no_arguments = Map::new();
        let arguments = arguments.as_object().unwrap_or(&no_arguments);
        let result = connection.server.call_with(tool, arguments, &ScopeMeta(scope), events).await;
        crate::metrics::host_request("mcp/tools/call", started.elapsed(), result.is_ok());
        let result = result.map_err(into_host_error)?;
        let app = connection.has_app(tool);
        let sorted = if app { app_outcome(&result) } else { outcome(&result) };
        match sorted {
            Outcome::Output(output) => {
                let app_result = app.then(|| crate::mcp::apps::result_for_app(&result));
                Ok(Read { output, app_result })
            }
            Outcome::Failed(said) => Err(HostError::ToolFailed(said)),
        }
    }
}

/// [`scope_meta`] as it is written, without a JSON value built for it.
struct ScopeMeta<'a>(&'a ExecutionScope);

impl serde::Serialize for ScopeMeta<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(Some(1))?;
        map.serialize_entry(SCOPE_META_KEY, self.0)?;
        map.end()
    }
}

/// The `_meta` of an MCP call: the caller's scope under [`SCOPE_META_KEY`].
pub fn scope_meta(scope: &ExecutionScope) -> Map<String, Value> {
    let mut meta = Map::new();
    meta.insert(SCOPE_META_KEY.into(), serde_json::to_value(scope).unwrap_or_default());
    meta
}

/// An MCP failure as the engine tells it (its own words for the user and
/// the model; the server's text only in the log).
fn into_host_error(error: McpError) -> HostError {
    match error {
        McpError::Unreachable(why) => HostError::Unreachable(why),
        McpError::Unauthorized(status) => HostError::Unauthorized(format!("the MCP server answered {status}")),
        McpError::Timeout(after) => HostError::Timeout(after),
        McpError::Protocol(why) | McpError::Headers(why) => HostError::Invalid(why),
        McpError::Failed(why) => HostError::Failed { status: 0, message: why },
    }
}

fn origin(integration: &str, name: &str, title: Option<String>, definition: &Value) -> ToolOrigin {
    ToolOrigin {
        integration: integration.to_owned(),
        name: name.to_owned(),
        title,
        digest: hex::encode(Sha256::digest(definition.to_string().as_bytes())),
        app: None,
    }
}

/// An MCP server's tools as the engine's, classified (safe by default,
/// `mcp::classify`); an unusable one is skipped and logged.
pub fn mcp_tools(integration: &str, server: &McpServer, listed: &[Value]) -> Vec<ToolSpec> {
    listing(integration, server, listed, true)
}

/// [`mcp_tools`], the model's only (`for_model`) or all of them.
fn listing(integration: &str, server: &McpServer, listed: &[Value], for_model: bool) -> Vec<ToolSpec> {
    let mut tools: Vec<ToolSpec> = Vec::new();
    for raw in listed {
        // A tool only an app may call (MCP Apps' `visibility`) is not the model's.
        if for_model && !crate::mcp::apps::visible_to_model(raw) {
            continue;
        }
        let Some(name) = raw.get("name").and_then(Value::as_str).filter(|n| usable_name(n)) else {
            tracing::warn!(integration = %integration, "skipping an MCP tool with an unusable name");
            continue;
        };
        if tools.iter().any(|t| t.name == name) {
            tracing::warn!(integration = %integration, tool = name, "skipping a second MCP tool of the same name");
            continue;
        }
        let input_schema = raw.get("inputSchema").cloned().unwrap_or_else(|| json!({"type": "object"}));
        if crate::schema::too_large(&input_schema).is_some() {
            tracing::warn!(integration = %integration, tool = name, "skipping an MCP tool whose inputSchema is too large or deep");
            continue;
        }
        let text = |pointer: &str| raw.pointer(pointer).and_then(Value::as_str).map(str::to_owned);
        let title = text("/title").or_else(|| text("/annotations/title")).filter(|t| !t.trim().is_empty());
        let app = crate::mcp::apps::resource_uri(raw).map(str::to_owned);
        tools.push(ToolSpec {
            name: name.to_owned(),
            description: text("/description").unwrap_or_default(),
            verb: verb(Hints::of(raw), server.trust_annotations, server.verbs.get(name).copied()),
            input_schema: crate::host::InputSchema::new(&input_schema),
            direct: false,
            origin: ToolOrigin { app, ..origin(integration, name, title, raw) },
        });
    }
    tools
}

/// An MCP tool name we take: 1 to 128 characters (the spec's limit), none
/// of them a control character or whitespace (the model sees it mapped to
/// its own rules).
pub fn usable_name(name: &str) -> bool {
    !name.is_empty()
        && name.chars().count() <= MAX_MCP_TOOL_NAME
        && !name.chars().any(|c| c.is_control() || c.is_whitespace())
}

/// What a staged MCP call shows: its title (or name), then each argument
/// on a line of its own, strings as they are and the rest as JSON.
pub fn readable_call(tool: &ToolSpec, arguments: &Value) -> String {
    let mut lines = vec![tool.origin.title.clone().unwrap_or_else(|| tool.origin.name.clone())];
    if let Some(arguments) = arguments.as_object() {
        for (key, value) in arguments {
            let value = match value {
                Value::String(text) => text.clone(),
                other => other.to_string(),
            };
            lines.push(format!("{key}: {value}"));
        }
    }
    lines.join("\n")
}

/// One list of tools from every source's: a name offered by two sources
/// becomes `<integration>__<tool>` for each; a name still taken twice after
/// that keeps its first tool only.
pub fn offer(lists: Vec<Vec<ToolSpec>>) -> Vec<ToolSpec> {
    let mut sources_of: HashMap<String, usize> = HashMap::new();
    for list in &lists {
        for tool in list {
            *sources_of.entry(tool.name.clone()).or_default() += 1;
        }
    }
    // Sized once: a turn keeps this list while it waits on a tool.
    let mut offered: Vec<ToolSpec> = Vec::with_capacity(lists.iter().map(Vec::len).sum());
    for mut tool in lists.into_iter().flatten() {
        if sources_of.get(&tool.name).is_some_and(|n| *n > 1) {
            tool.name = format!("{}__{}", tool.origin.integration, tool.origin.name);
        }
        if offered.iter().any(|t| t.name == tool.name) {
            tracing::warn!(tool = %tool.name, integration = %tool.origin.integration, "a tool name is taken twice; the second is not offered");
            continue;
        }
        offered.push(tool);
    }
    offered
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(integration: &str, name: &str) -> ToolSpec {
        let mut spec: ToolSpec = serde_json::from_value(json!({"name": name, "verb": "get"})).unwrap();
        spec.origin = ToolOrigin { integration: integration.into(), name: name.into(), ..Default::default() };
        spec
    }

    #[test]
    fn names_stay_while_unique_and_are_prefixed_where_sources_collide() {
        let offered = offer(vec![
            vec![tool("generic-rest", "search"), tool("generic-rest", "add_to_cart")],
            vec![tool("docs", "search"), tool("docs", "read_page")],
            vec![tool("wiki", "search")],
        ]);
        let names: Vec<&str> = offered.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["generic-rest__search", "add_to_cart", "docs__search", "read_page", "wiki__search"]);
        let back: Vec<(&str, &str)> =
            offered.iter().map(|t| (t.origin.integration.as_str(), t.origin.name.as_str())).collect();
        assert_eq!(back[2], ("docs", "search"), "each keeps its own source and name");
    }

    #[test]
    fn a_prefixed_name_that_is_already_taken_is_offered_once() {
        let offered = offer(vec![vec![tool("a", "x"), tool("a", "b__x")], vec![tool("b", "x")]]);
        let names: Vec<&str> = offered.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["a__x", "b__x"]);
        assert_eq!(offered[1].origin.integration, "a", "the first keeps it");
    }

    #[test]
    fn an_mcp_call_is_staged_readable_and_its_scope_travels_in_meta() {
        let mut spec = tool("crm", "update_contact");
        spec.origin.title = Some("Update a contact".into());
        let text = readable_call(&spec, &json!({"email": "a@b.example", "vip": true, "tags": ["x"]}));
        assert_eq!(text, "Update a contact\nemail: a@b.example\ntags: [\"x\"]\nvip: true");
        let scope = ExecutionScope {
            workspace_id: "ws_1".into(),
            external_user_id: "u1".into(),
            permissions: vec!["orders:write".into()],
            request_id: "act_1".into(),
        };
        assert_eq!(
            Value::Object(scope_meta(&scope)),
            json!({"context-assistant/execution": {
                "workspaceId": "ws_1", "externalUserId": "u1", "permissions": ["orders:write"], "requestId": "act_1"
            }})
        );
    }

    #[test]
    fn mcp_tools_are_classified_named_and_checked() {
        let source = Source {
            workspace_id: "ws".into(),
            name: "crm".into(),
            url: "https://crm.example/mcp".into(),
            version: 1,
            allowed_tools: vec![],
            kind: SourceKind::Mcp(McpServer {
                url: Url::parse("https://crm.example/mcp").unwrap(),
                headers: vec![("Authorization".into(), "Bearer s3cret".into())],
                trust_annotations: true,
                verbs: BTreeMap::from([("wipe".to_owned(), Verb::Get)]),
            }),
        };
        let SourceKind::Mcp(server) = &source.kind else { unreachable!() };
        let listed = [
            json!({"name": "find", "title": "Find", "annotations": {"readOnlyHint": true}, "inputSchema": {"type": "object"}}),
            json!({"name": "wipe", "annotations": {"destructiveHint": true}}),
            json!({"name": "with space"}),
            json!({"name": "find"}),
            json!({"name": "x".repeat(129)}),
        ];
        let tools = mcp_tools(&source.name, server, &listed);
        let got: Vec<(&str, Verb)> = tools.iter().map(|t| (t.name.as_str(), t.verb)).collect();
        assert_eq!(got, [("find", Verb::Get), ("wipe", Verb::Get)], "the host's verb wins; unusable ones skipped");
        assert_eq!(tools[0].origin.title.as_deref(), Some("Find"));
        assert_ne!(tools[0].origin.digest, tools[1].origin.digest);
        let changed = mcp_tools(&source.name, server, &[json!({"name": "find", "description": "new"})]);
        assert_ne!(changed[0].origin.digest, tools[0].origin.digest, "a changed definition has a new digest");
        assert!(!format!("{source:?}").contains("s3cret"), "headers never reach a log");
    }
}
