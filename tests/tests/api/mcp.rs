//! The MCP client against a server written with rmcp's own server side
//! (Streamable HTTP, in this process): the handshake, paged tool lists,
//! the classification of what it lists, a call with our `_meta`, its
//! result as the engine reads it, a call that outlives its time (the
//! server is told), and the errors that name their cause.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::response::IntoResponse;
use rmcp::ServerHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ElicitRequestParams, ErrorData, Implementation,
    ListToolsResult, PaginatedRequestParams, ProgressNotificationParam, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{NotificationContext, RequestContext, RoleServer};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::{Map, Value, json};
use server::mcp::classify::{Hints, verb};
use server::mcp::client::{Endpoint, McpError, connect};
use server::mcp::content::{Outcome, outcome};
use server::mcp::pool::{Connections, Key};
use widget::wire::Verb;

use crate::helpers::{Says, serve, spawn_until_ready};

/// A shop's MCP server: two pages of tools; `search_orders` answers with
/// text and a link, `fail` with `isError`, `hang` until it is cancelled.
#[derive(Clone, Default)]
pub(crate) struct Shop {
    /// The `_meta` of every call, and the calls cancelled.
    pub metas: Arc<Mutex<Vec<Value>>>,
    pub cancelled: Arc<Mutex<Vec<String>>>,
    /// Every call: the tool's name and its arguments.
    pub calls: Arc<Mutex<Vec<(String, Value)>>>,
    /// Handshakes and `tools/list` pages served.
    pub inits: Arc<AtomicUsize>,
    pub lists: Arc<AtomicUsize>,
    /// Every client that shook hands (to tell them the tools changed).
    pub peers: Arc<Mutex<Vec<rmcp::service::Peer<RoleServer>>>>,
    /// `add_note` is defined anew (its description changes).
    pub redefined: Arc<std::sync::atomic::AtomicBool>,
    /// What `choose_size` heard back from the user.
    pub answers: Arc<Mutex<Vec<String>>>,
    /// How long `add_note` takes, in ms.
    pub note_delay_ms: Arc<std::sync::atomic::AtomicU64>,
    /// `hang` hangs for the connect report's read too.
    pub hang_for_the_check: Arc<std::sync::atomic::AtomicBool>,
}

impl Shop {
    /// The calls of `tool` so far.
    pub fn calls_of(&self, tool: &str) -> Vec<Value> {
        self.calls.lock().unwrap().iter().filter(|(name, _)| name == tool).map(|(_, a)| a.clone()).collect()
    }

    /// Tells every client its tools changed.
    pub async fn announce_tool_changes(&self) {
        let peers = self.peers.lock().unwrap().clone();
        for peer in peers {
            let _ = peer.notify_tool_list_changed().await;
        }
    }
}

fn tool(value: Value) -> Tool {
    serde_json::from_value(value).unwrap()
}

impl ServerHandler for Shop {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().enable_tool_list_changed().build())
            .with_server_info(Implementation::new("shop", "1.2.3"))
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        self.peers.lock().unwrap().push(context.peer.clone());
        self.inits.fetch_add(1, Ordering::SeqCst);
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        self.lists.fetch_add(1, Ordering::SeqCst);
        let schema = json!({"type": "object", "properties": {"q": {"type": "string"}}});
        let second_page = request.and_then(|r| r.cursor).as_deref() == Some("page-2");
        let mut page = ListToolsResult::default();
        if second_page {
            page.tools = vec![
                tool(json!({"name": "cancel_order", "inputSchema": schema,
                            "annotations": {"readOnlyHint": false, "destructiveHint": true}})),
                tool(json!({"name": "hang", "inputSchema": schema, "annotations": {"readOnlyHint": true}})),
                tool(json!({"name": "fail", "inputSchema": schema, "annotations": {"readOnlyHint": true}})),
                tool(json!({"name": "count_stock", "inputSchema": schema, "annotations": {"readOnlyHint": true}})),
                tool(json!({"name": "choose_size", "inputSchema": schema, "annotations": {"readOnlyHint": true}})),
            ];
        } else {
            page.tools = vec![
                tool(json!({"name": "search_orders", "title": "Search orders", "description": "Finds orders",
                            "inputSchema": schema, "annotations": {"readOnlyHint": true}})),
                tool(json!({"name": "add_note", "title": "Add a note", "inputSchema": schema,
                            "description": if self.redefined.load(Ordering::SeqCst) { "Adds a note (v2)" } else { "Adds a note" },
                            "annotations": {"readOnlyHint": false, "destructiveHint": false}})),
            ];
            page.next_cursor = Some("page-2".into());
        }
        Ok(page)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        // rmcp hands a request's `_meta` over in its context.
        let meta = serde_json::to_value(&context.meta).unwrap();
        self.metas.lock().unwrap().push(meta.clone());
        let arguments = Value::Object(request.arguments.clone().unwrap_or_default());
        self.calls.lock().unwrap().push((request.name.to_string(), arguments));
        let result = match request.name.as_ref() {
            "search_orders" => json!({"content": [
                {"type": "text", "text": "Order 7 shipped."},
                {"type": "resource_link", "uri": "https://shop.example/orders/7", "name": "order-7", "title": "Order 7"}
            ]}),
            "fail" => json!({"isError": true, "content": [{"type": "text", "text": "no such order"}]}),
            // Over the assistant's 1 MiB cap on an answer.
            "huge" => json!({"content": [{"type": "text", "text": "x".repeat(2 * 1024 * 1024)}]}),
            // Three progress notifications, then the answer.
            "count_stock" => {
                if let Some(token) = context.meta.get_progress_token() {
                    for step in 1..=3 {
                        let mut progress = ProgressNotificationParam::new(token.clone(), f64::from(step));
                        progress.total = Some(3.0);
                        progress.message = Some(format!("Counting shelf {step}"));
                        context.peer.notify_progress(progress).await.unwrap();
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    }
                }
                json!({"content": [{"type": "text", "text": "42 in stock"}]})
            }
            // Asks the user (on the call's own stream) which size.
            "choose_size"
                if meta.pointer("/context-assistant~1execution/externalUserId")
                    != Some(&json!("context-assistant-check")) =>
            {
                let schema = json!({"type": "object", "required": ["size"], "properties": {
                    "size": {"type": "string", "title": "Size", "enum": ["s", "m", "l"],
                             "enumNames": ["Small", "Medium", "Large"]},
                    "note": {"type": "string", "title": "Note", "maxLength": 40}}});
                let request: ElicitRequestParams = serde_json::from_value(
                    json!({"mode": "form", "message": "Which size would you like?", "requestedSchema": schema}),
                )
                .unwrap();
                let answer = context.peer.create_elicitation(request).await;
                let said = match answer {
                    Ok(result) => serde_json::to_value(&result).unwrap().to_string(),
                    Err(error) => format!("error: {error}"),
                };
                self.answers.lock().unwrap().push(said.clone());
                json!({"content": [{"type": "text", "text": format!("answer: {said}")}]})
            }
            "add_note" => {
                let delay = self.note_delay_ms.load(Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(delay)).await;
                json!({"content": [{"type": "text", "text": "noted"}]})
            }
            "restock" => {
                context.peer.notify_tool_list_changed().await.unwrap();
                json!({"content": [{"type": "text", "text": "restocked"}]})
            }
            // The connect report's own read does not wait (it would wait out the timeout).
            "hang"
                if meta.pointer("/context-assistant~1execution/externalUserId")
                    == Some(&json!("context-assistant-check"))
                    && !self.hang_for_the_check.load(Ordering::SeqCst) =>
            {
                json!({"content": [{"type": "text", "text": "checked"}]})
            }
            "hang" => {
                context.ct.cancelled().await;
                self.cancelled.lock().unwrap().push(request.name.to_string());
                return Err(ErrorData::internal_error("cancelled", None));
            }
            _ => json!({"content": [{"type": "text", "text": "done"}]}),
        };
        Ok(serde_json::from_value::<CallToolResult>(result).unwrap().into())
    }
}

/// The shop at `url` as `workspace`'s source `shop`, its annotations trusted.
pub(crate) fn shop_source(workspace: &str, url: url::Url) -> server::sources::Source {
    use server::sources::{McpServer, Source, SourceKind};
    Source {
        workspace_id: workspace.into(),
        name: "shop".into(),
        url: url.to_string(),
        version: 1,
        allowed_tools: Vec::new(),
        kind: SourceKind::Mcp(McpServer {
            url,
            headers: Vec::new(),
            trust_annotations: true,
            verbs: Default::default(),
        }),
    }
}

/// The shop on a port of its own; its MCP endpoint's URL.
pub(crate) async fn start(shop: Shop) -> url::Url {
    start_with_sessions(shop).await.0
}

/// The shop behind a bearer: anything else is answered 401.
pub(crate) async fn start_with_bearer(shop: Shop, bearer: &'static str) -> url::Url {
    let service = StreamableHttpService::new(
        move || Ok(shop.clone()),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    );
    let guarded = Router::new().nest_service("/mcp", service).layer(axum::middleware::from_fn(
        move |request: axum::extract::Request, next: axum::middleware::Next| async move {
            let expected = format!("Bearer {bearer}");
            if request.headers().get("authorization").and_then(|v| v.to_str().ok()) != Some(expected.as_str()) {
                return (axum::http::StatusCode::UNAUTHORIZED, "no").into_response();
            }
            next.run(request).await
        },
    ));
    let address = serve(guarded).await;
    url::Url::parse(&format!("http://{address}/mcp")).unwrap()
}

/// The same, with the server's sessions (to make it forget them).
async fn start_with_sessions(shop: Shop) -> (url::Url, Arc<LocalSessionManager>) {
    let sessions = Arc::new(LocalSessionManager::default());
    let service =
        StreamableHttpService::new(move || Ok(shop.clone()), sessions.clone(), StreamableHttpServerConfig::default());
    let address = serve(Router::new().nest_service("/mcp", service)).await;
    (url::Url::parse(&format!("http://{address}/mcp")).unwrap(), sessions)
}

/// A TCP relay to `upstream` on a port of its own: aborting its task cuts
/// every connection through it at once (a server that goes away).
pub(crate) async fn relay(upstream: &url::Url) -> (url::Url, tokio::task::JoinHandle<()>) {
    let target = format!("{}:{}", upstream.host_str().unwrap(), upstream.port().unwrap());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let mut url = upstream.clone();
    url.set_port(Some(listener.local_addr().unwrap().port())).unwrap();
    let task = tokio::spawn(async move {
        let mut connections = tokio::task::JoinSet::new();
        while let Ok((mut inbound, _)) = listener.accept().await {
            let target = target.clone();
            connections.spawn(async move {
                if let Ok(mut outbound) = tokio::net::TcpStream::connect(target).await {
                    let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                }
            });
        }
    });
    (url, task)
}

/// Waits (at most 10 s) until `done` holds.
pub(crate) async fn until(mut done: impl FnMut() -> bool) {
    for _ in 0..200 {
        if done() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn endpoint(url: &url::Url, headers: &[(String, String)], timeout: Duration) -> Endpoint {
    let http = server::host::client_builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    Endpoint { url: url.clone(), headers: headers.to_vec(), http, timeout }
}

#[tokio::test]
async fn a_server_is_connected_its_pages_listed_and_its_tools_classified() {
    let url = start(Shop::default()).await;
    let server = connect(endpoint(&url, &[], Duration::from_secs(10))).await.unwrap();
    assert_eq!(server.server_info(), Some(("shop".into(), "1.2.3".into())));
    assert!(server.announces_tool_changes());

    let tools = server.tools().await.unwrap();

    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        ["search_orders", "add_note", "cancel_order", "hang", "fail", "count_stock", "choose_size"],
        "both pages"
    );
    let verbs = |trust: bool| -> Vec<Verb> { tools.iter().map(|t| verb(Hints::of(t), trust, None)).collect() };
    assert_eq!(verbs(true)[..3], [Verb::Get, Verb::Create, Verb::Delete]);
    assert_eq!(verbs(false)[..3], [Verb::Create, Verb::Create, Verb::Delete], "nothing runs by itself untrusted");
    server.close().await;
}

#[tokio::test]
async fn a_call_carries_the_callers_scope_and_its_result_is_sorted() {
    let shop = Shop::default();
    let url = start(shop.clone()).await;
    let server = connect(endpoint(&url, &[], Duration::from_secs(10))).await.unwrap();
    let arguments = json!({"q": "7"}).as_object().cloned().unwrap();
    let scope = json!({"context-assistant/execution": {"workspaceId": "ws_1", "externalUserId": "u_1",
                       "permissions": ["orders:read"], "requestId": "req_1"}});

    let result = server.call("search_orders", arguments, scope.as_object().cloned().unwrap()).await.unwrap();

    let Outcome::Output(output) = outcome(&result) else { panic!("{result}") };
    assert_eq!(output["text"], "Order 7 shipped.");
    assert_eq!(output["display"][0]["url"], "https://shop.example/orders/7");
    let meta = shop.metas.lock().unwrap()[0].clone();
    assert_eq!(meta["context-assistant/execution"]["externalUserId"], "u_1", "{meta}");

    let failed = server.call("fail", Map::new(), Map::new()).await.unwrap();
    assert_eq!(outcome(&failed), Outcome::Failed("no such order".into()));
}

#[tokio::test]
async fn a_call_that_outlives_its_time_is_cancelled_on_the_server() {
    let shop = Shop::default();
    let url = start(shop.clone()).await;
    let server = connect(endpoint(&url, &[], Duration::from_millis(500))).await.unwrap();

    let error = server.call("hang", Map::new(), Map::new()).await.unwrap_err();

    assert!(matches!(error, McpError::Timeout(_)), "{error:?}");
    until(|| !shop.cancelled.lock().unwrap().is_empty()).await;
    assert_eq!(*shop.cancelled.lock().unwrap(), ["hang"], "notifications/cancelled reached the server");
}

/// Over Streamable HTTP a call and its cancellation are two POSTs: when
/// the server takes the call's up late (here 800 ms after it arrived), the
/// cancellation sent as the caller stopped waiting is handled first, and
/// ignored (an unknown request). It is sent again, and the call still ends on the server.
#[tokio::test]
async fn a_cancellation_that_overtakes_its_call_still_ends_it_on_the_server() {
    let shop = Shop::default();
    let served = shop.clone();
    let service = StreamableHttpService::new(
        move || Ok(served.clone()),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    );
    let slow_calls = Router::new().nest_service("/mcp", service).layer(axum::middleware::from_fn(
        |request: axum::extract::Request, next: axum::middleware::Next| async move {
            let (parts, body) = request.into_parts();
            let bytes = axum::body::to_bytes(body, 1 << 20).await.unwrap();
            let request = axum::extract::Request::from_parts(parts, axum::body::Body::from(bytes.clone()));
            if !bytes.windows(10).any(|w| w == b"tools/call") {
                return next.run(request).await;
            }
            // Received, and handed on late, even after the client hung up.
            let late = tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(800)).await;
                next.run(request).await
            });
            late.await.unwrap()
        },
    ));
    let url = url::Url::parse(&format!("http://{}/mcp", serve(slow_calls).await)).unwrap();
    let server = connect(endpoint(&url, &[], Duration::from_millis(100))).await.unwrap();

    let error = server.call("hang", Map::new(), Map::new()).await.unwrap_err();

    assert!(matches!(error, McpError::Timeout(_)), "{error:?}");
    until(|| !shop.cancelled.lock().unwrap().is_empty()).await;
    assert_eq!(shop.calls_of("hang").len(), 1, "the call reached the server, after its cancellation");
    assert_eq!(*shop.cancelled.lock().unwrap(), ["hang"], "the call that came after its cancellation ended");
}

#[tokio::test]
async fn an_answer_over_the_size_cap_is_refused_and_the_connection_lives_on() {
    let url = start(Shop::default()).await;
    let server = connect(endpoint(&url, &[], Duration::from_secs(10))).await.unwrap();

    let error = server.call("huge", Map::new(), Map::new()).await.unwrap_err();

    assert!(matches!(error, McpError::Protocol(_) | McpError::Unreachable(_)), "{error:?}");
    let answer = server.call("search_orders", Map::new(), Map::new()).await.unwrap();
    assert_eq!(answer["content"][0]["text"], "Order 7 shipped.", "the next call still works");
}

#[tokio::test]
async fn a_refusal_a_stranger_and_silence_are_told_apart() {
    let refusing = serve(
        Router::new().fallback(|| async { (axum::http::StatusCode::UNAUTHORIZED, "who are you?").into_response() }),
    )
    .await;
    let url = url::Url::parse(&format!("http://{refusing}/mcp")).unwrap();
    let error = connect(endpoint(&url, &[], Duration::from_secs(10))).await.err().unwrap();
    assert!(matches!(error, McpError::Unauthorized(401)), "{error:?}");
    assert_eq!(error.code(), "mcp_unauthorized");

    let stranger =
        serve(Router::new().fallback(|| async { axum::response::Html("<h1>Welcome to our shop</h1>") })).await;
    let url = url::Url::parse(&format!("http://{stranger}/")).unwrap();
    let error = connect(endpoint(&url, &[], Duration::from_secs(10))).await.err().unwrap();
    assert_eq!(error.code(), "mcp_protocol", "{error:?}");

    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap()
    };
    let url = url::Url::parse(&format!("http://{closed}/mcp")).unwrap();
    let error = connect(endpoint(&url, &[], Duration::from_secs(10))).await.err().unwrap();
    assert_eq!(error.code(), "mcp_unreachable", "{error:?}");

    let headers = [("Mcp-Session-Id".to_owned(), "forged".to_owned())];
    let error = connect(endpoint(&url, &headers, Duration::from_secs(10))).await.err().unwrap();
    assert_eq!(error.code(), "mcp_headers", "a reserved header is refused before any call");
}

#[tokio::test]
async fn one_connection_per_integration_is_reused_and_its_tools_kept_until_they_change() {
    let shop = Shop::default();
    let (url, sessions) = start_with_sessions(shop.clone()).await;
    let connections = Connections::default();
    let key = Key { workspace_id: "ws_1".into(), name: "shop".into(), version: 1 };
    let open = || endpoint(&url, &[], Duration::from_secs(10));

    let first = connections.get(&key, open).await.unwrap();
    let tools = first.tools().await.unwrap();
    let again = connections.get(&key, open).await.unwrap();
    let kept = again.tools().await.unwrap();

    // `notifications/initialized` is handled in a task of the server's own.
    until(|| shop.inits.load(Ordering::SeqCst) >= 1).await;
    assert_eq!(shop.inits.load(Ordering::SeqCst), 1, "one handshake for two turns");
    assert_eq!(shop.lists.load(Ordering::SeqCst), 2, "two pages, listed once");
    assert_eq!(tools, kept);

    // The server says its tools changed: the next turn lists them again.
    again.server.call("restock", Map::new(), Map::new()).await.unwrap();
    until(|| again.server.tools_changed()).await;
    assert!(again.server.tools_changed(), "notifications/tools/list_changed arrived");
    again.tools().await.unwrap();
    assert_eq!(shop.lists.load(Ordering::SeqCst), 4);
    again.tools().await.unwrap();
    assert_eq!(shop.lists.load(Ordering::SeqCst), 4, "kept again");

    // The server forgets the session: the next call starts a new one by itself.
    sessions.sessions.write().await.clear();
    let answer = again.server.call("search_orders", Map::new(), Map::new()).await.unwrap();
    assert_eq!(answer["content"][0]["text"], "Order 7 shipped.");
    until(|| shop.inits.load(Ordering::SeqCst) >= 2).await;
    assert_eq!(shop.inits.load(Ordering::SeqCst), 2, "re-initialized once");

    // A new version of the integration: a new connection, the old one closed.
    let newer = Key { version: 2, ..key.clone() };
    connections.get(&newer, open).await.unwrap();
    assert_eq!(connections.len(), 1);
    connections.forget("ws_1", "shop");
    assert!(connections.is_empty());
}

/// An MCP server of npm's, nobody here wrote, run with node on a port of
/// its own (its `PORT`) until dropped; `./dev test` installs them in
/// tests/mcp. [`Everything::start`] is the protocol's reference server,
/// [`Everything::start_basic_app`] an MCP App (server-basic-vanillajs).
pub(crate) struct Everything {
    child: std::process::Child,
    pub url: url::Url,
}

impl Everything {
    pub fn start() -> Everything {
        Self::start_node("server-everything/dist/index.js", &["streamableHttp"], Says::Stderr, "listening on port")
    }

    pub fn start_basic_app() -> Everything {
        Self::start_node("server-basic-vanillajs/dist/index.js", &[], Says::Stdout, "MCP server listening on")
    }

    /// One server-basic-vanillajs for every test of this process that only
    /// calls its clock (the MCP App tests: each connects it to a workspace
    /// of its own, in a session of its own). Started once — 20 node starts
    /// a run before (issue #47: the test run) — and, a static never being
    /// dropped, ended with this process (tests/exit-with-parent.cjs).
    pub fn shared_basic_app() -> &'static Everything {
        static SHARED: std::sync::OnceLock<Everything> = std::sync::OnceLock::new();
        SHARED.get_or_init(|| {
            Self::start_node_with(
                &["--require", crate::helpers::EXIT_WITH_PARENT],
                &[("EXIT_WITH_PARENT", std::process::id().to_string())],
                "server-basic-vanillajs/dist/index.js",
                &[],
                Says::Stdout,
                "MCP server listening on",
            )
        })
    }

    fn start_node(script: &str, args: &[&str], says: Says, marker: &'static str) -> Everything {
        Self::start_node_with(&[], &[], script, args, says, marker)
    }

    fn start_node_with(
        node_args: &[&str],
        env: &[(&str, String)],
        script: &str,
        args: &[&str],
        says: Says,
        marker: &'static str,
    ) -> Everything {
        let script = format!("{}/mcp/node_modules/@modelcontextprotocol/{script}", env!("CARGO_MANIFEST_DIR"));
        assert!(std::path::Path::new(&script).exists(), "not installed: run ./dev test (npm ci in tests/mcp)");
        // It listens on the PORT it is given: a free one, tried again if
        // another process took it meanwhile.
        for _ in 0..3 {
            let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
            let mut command = std::process::Command::new("node");
            command.args(node_args).arg(&script).args(args).env("PORT", port.to_string());
            command.envs(env.iter().map(|(k, v)| (k, v)));
            let ready = move |line: &str| line.contains(marker).then(String::new);
            if let Some((child, _)) = spawn_until_ready(command, says, ready, Duration::from_secs(30)) {
                let url = url::Url::parse(&format!("http://127.0.0.1:{port}/mcp")).unwrap();
                return Everything { child, url };
            }
        }
        panic!("{script} did not start three times");
    }
}

impl Drop for Everything {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The hostile MCP App of tests/mcp/hostile_app.py (PyPI `mcp`'s server
/// and its MCP Apps extension), on a port of its own until dropped, with
/// the listener that counts what its page managed to send out.
pub(crate) struct HostileApp {
    child: std::process::Child,
    pub url: url::Url,
    /// `http://127.0.0.1:PORT`: `/count` says what reached it.
    pub counter: String,
}

impl HostileApp {
    pub fn start() -> HostileApp {
        let script = format!("{}/mcp/hostile_app.py", env!("CARGO_MANIFEST_DIR"));
        for _ in 0..3 {
            let free = || std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
            let (port, counter) = (free(), free());
            let mut command = std::process::Command::new(crate::helpers::test_python());
            command.arg(&script).arg(port.to_string()).arg(counter.to_string());
            let ready = |line: &str| line.contains("hostile app ready").then(String::new);
            if let Some((child, _)) = spawn_until_ready(command, Says::Stdout, ready, Duration::from_secs(30)) {
                let url = url::Url::parse(&format!("http://127.0.0.1:{port}/mcp")).unwrap();
                return HostileApp { child, url, counter: format!("http://127.0.0.1:{counter}") };
            }
        }
        panic!("{script} did not start three times (is PyPI's mcp in the tests' venv? run ./dev test)");
    }

    /// `{"steal": n, "orders": [...]}`: what reached the counter, and the
    /// orders the server has carried out.
    pub async fn counts(&self) -> serde_json::Value {
        reqwest::get(format!("{}/count", self.counter)).await.unwrap().json().await.unwrap()
    }
}

impl Drop for HostileApp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An MCP App nobody here wrote: its tool names its UI, which is read
/// through the server (once per connection), never from the browser.
#[tokio::test]
async fn an_mcp_apps_ui_resource_is_read_through_the_server_and_kept() {
    use server::sources::{McpServer, Source, SourceKind, Sources};
    let app = Everything::start_basic_app();
    let sources = Sources::new(server::host::HostClient::new(Duration::from_secs(20), true), true);
    let source = Source {
        workspace_id: "ws_app".into(),
        name: "clock".into(),
        url: app.url.to_string(),
        version: 1,
        allowed_tools: Vec::new(),
        kind: SourceKind::Mcp(McpServer {
            url: app.url.clone(),
            headers: Vec::new(),
            trust_annotations: false,
            verbs: Default::default(),
        }),
    };
    let scope = server::host::ExecutionScope {
        workspace_id: "ws_app".into(),
        external_user_id: "u".into(),
        permissions: Vec::new(),
        request_id: "req".into(),
    };

    let tools = sources.tools(&source, &scope).await.unwrap();

    let clock = tools.iter().find(|t| t.name == "get-time").unwrap_or_else(|| panic!("{tools:?}"));
    let uri = clock.origin.app.clone().expect("the tool names its UI");
    assert_eq!(uri, "ui://get-time/mcp-app.html");
    let resource = sources.app_resource(&source, &uri).await.unwrap();
    assert!(resource.html.contains("<html") || resource.html.contains("<!DOCTYPE"), "{}", &resource.html[..200]);
    let again = sources.app_resource(&source, &uri).await.unwrap();
    assert!(std::sync::Arc::ptr_eq(&resource, &again), "kept, not read again");
    for refused in ["https://evil.example/app.html", "ui://", "file:///etc/passwd"] {
        assert!(sources.app_resource(&source, refused).await.is_err(), "{refused}");
    }
    assert!(sources.app_resource(&source, "ui://get-time/other.html").await.is_err(), "not a resource it has");
}

#[tokio::test]
async fn the_reference_server_everything_is_listed_classified_and_called() {
    let everything = Everything::start();
    let server = connect(endpoint(&everything.url, &[], Duration::from_secs(20))).await.unwrap();

    let tools = server.tools().await.unwrap();

    let find =
        |name: &str| tools.iter().find(|t| t["name"] == name).unwrap_or_else(|| panic!("no {name} in {tools:?}"));
    let echo = find("echo");
    assert_eq!(verb(Hints::of(echo), true, None), Verb::Get, "read-only, trusted");
    assert_eq!(verb(Hints::of(echo), false, None), Verb::Update, "untrusted: Apply, idempotent");
    let arguments = json!({"message": "hello from Rust"}).as_object().cloned().unwrap();
    let result = server.call("echo", arguments, Map::new()).await.unwrap();
    assert_eq!(outcome(&result), Outcome::Output(json!({"text": "Echo: hello from Rust"})));

    let links = json!({"count": 2}).as_object().cloned().unwrap();
    let result = server.call("get-resource-links", links, Map::new()).await.unwrap();
    let Outcome::Output(output) = outcome(&result) else { panic!("{result}") };
    let uris: Vec<&str> = output["links"].as_array().unwrap().iter().map(|l| l["uri"].as_str().unwrap()).collect();
    assert_eq!(uris.len(), 2, "{output}");
    assert!(
        server::display::cards_from_output(&output).is_empty(),
        "its demo:// links are named to the model, never shown as cards: {output}"
    );

    let unknown = server.call("no-such-tool", Map::new(), Map::new()).await.unwrap();
    let Outcome::Failed(said) = outcome(&unknown) else { panic!("{unknown}") };
    assert!(said.contains("not found"), "the model is told why: {said}");
    server.close().await;
}

/// Reads through the engine's tool sources keep their TCP connection, as
/// Remote Tools calls do: no handshake per call (and, against a server
/// without Nagle's delay, no 40 ms wait for a delayed ACK either).
#[tokio::test]
async fn reads_through_the_sources_reuse_a_kept_connection() {
    use server::host::{ExecutionScope, HostClient};
    use server::sources::Sources;

    let shop = Shop::default();
    let accepted = Arc::new(AtomicUsize::new(0));
    let service = StreamableHttpService::new(
        {
            let shop = shop.clone();
            move || Ok(shop.clone())
        },
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let counted = {
        let accepted = accepted.clone();
        axum::serve::ListenerExt::tap_io(listener, move |tcp| {
            accepted.fetch_add(1, Ordering::SeqCst);
            drop(tcp.set_nodelay(true));
        })
    };
    tokio::spawn(async move { axum::serve(counted, Router::new().nest_service("/mcp", service)).await });
    let url = url::Url::parse(&format!("http://{address}/mcp")).unwrap();
    let sources = Sources::new(HostClient::new(Duration::from_secs(10), true), true);
    let source = shop_source("ws_1", url);
    let scope = ExecutionScope {
        workspace_id: "ws_1".into(),
        external_user_id: "u1".into(),
        permissions: Vec::new(),
        request_id: "req_1".into(),
    };
    let tools = sources.tools(&source, &scope).await.unwrap();
    let tool = tools.iter().find(|t| t.name == "search_orders").unwrap();
    let before = accepted.load(Ordering::SeqCst);

    for i in 0..20 {
        let (events, _) = tokio::sync::mpsc::unbounded_channel();
        let read = sources.read(&source, tool, &format!("call_{i}"), &json!({}), &scope, Some(events)).await.unwrap();
        assert_eq!(read.output["text"], "Order 7 shipped.", "{}", read.output);
    }

    assert_eq!(shop.calls_of("search_orders").len(), 20);
    let opened = accepted.load(Ordering::SeqCst) - before;
    assert!(opened <= 1, "20 reads opened {opened} connections");
}

/// A request's method, and its session and protocol version headers.
type Heading = (String, Option<String>, Option<String>);

/// What the hand-written server of [`start_polling`] heard.
#[derive(Clone, Default)]
struct Heard {
    requests: Arc<Mutex<Vec<Heading>>>,
    /// Our answers to its own requests.
    answers: Arc<Mutex<Vec<Value>>>,
    /// The `Last-Event-ID` of each stream taken up again.
    resumed: Arc<Mutex<Vec<String>>>,
}

/// A server of the 2025-11-25 protocol's polling habit, by hand (no SDK
/// writes it so): a call's event stream gives one event (an id and a
/// `retry`, no data), asks the client something it never advertised,
/// and closes; the stream taken up again with `Last-Event-ID` tells
/// progress and then the call's answer. Every request but the handshake
/// must carry its session.
async fn start_polling() -> (url::Url, Heard) {
    use axum::http::{HeaderMap, StatusCode, header};
    let heard = Heard::default();
    let events = |body: String| ([(header::CONTENT_TYPE, "text/event-stream")], body).into_response();
    let post = {
        let heard = heard.clone();
        move |headers: HeaderMap, body: axum::Json<Value>| async move {
            let text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).map(str::to_owned);
            let method = body["method"].as_str().unwrap_or_default().to_owned();
            let session = text("mcp-session-id");
            heard.requests.lock().unwrap().push((method.clone(), session.clone(), text("mcp-protocol-version")));
            if method == "initialize" {
                let result = json!({"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                                    "serverInfo": {"name": "polling", "version": "1"}});
                let answer = json!({"jsonrpc": "2.0", "id": body["id"], "result": result});
                return ([("mcp-session-id", "s-1")], axum::Json(answer)).into_response();
            }
            if session.as_deref() != Some("s-1") {
                return (StatusCode::BAD_REQUEST, "no session").into_response();
            }
            if method.is_empty() {
                heard.answers.lock().unwrap().push(body.0);
                return StatusCode::ACCEPTED.into_response();
            }
            if method != "tools/call" {
                return StatusCode::ACCEPTED.into_response();
            }
            match body["params"]["name"].as_str() {
                Some("garbled") => return events("data: {\"jsonrpc\": \"2.0\", \"id\": \n\n".into()),
                Some("cut") => return events(": nothing numbered, then the end\n\n".into()),
                Some("refused") => {
                    let error = json!({"jsonrpc": "2.0", "id": body["id"], "error": {"code": -32602, "message": "no such tool"}});
                    return (StatusCode::OK, axum::Json(error)).into_response();
                }
                _ => {}
            }
            let question = json!({"jsonrpc": "2.0", "id": "q-1", "method": "sampling/createMessage", "params": {}});
            events(format!("id: e-1\nretry: 20\ndata:\n\nid: e-2\ndata: {question}\n\n"))
        }
    };
    let get = {
        let heard = heard.clone();
        move |headers: HeaderMap| async move {
            let Some(from) = headers.get("last-event-id").and_then(|v| v.to_str().ok()) else {
                return StatusCode::METHOD_NOT_ALLOWED.into_response();
            };
            heard.resumed.lock().unwrap().push(from.to_owned());
            let progress = json!({"jsonrpc": "2.0", "method": "notifications/progress",
                                  "params": {"progressToken": "ca-1", "progress": 1, "total": 2, "message": "half\u{7}way"}});
            let answer =
                json!({"jsonrpc": "2.0", "id": "ca-1", "result": {"content": [{"type": "text", "text": "polled"}]}});
            events(format!("id: e-3\ndata: {progress}\n\nid: e-4\ndata: {answer}\n\n"))
        }
    };
    let router = Router::new().route("/mcp", axum::routing::post(post).get(get).delete(|| async { StatusCode::OK }));
    let address = serve(router).await;
    (url::Url::parse(&format!("http://{address}/mcp")).unwrap(), heard)
}

/// A call's event stream that the server closes before its answer is
/// taken up again where it broke off (`Last-Event-ID`), within the
/// session; a request of the server's we never advertised is refused
/// (JSON-RPC's "method not found"), and the call's progress still reaches
/// its caller.
#[tokio::test]
async fn a_calls_stream_closed_early_is_taken_up_again_where_it_broke_off() {
    let (url, heard) = start_polling().await;
    let server = connect(endpoint(&url, &[], Duration::from_secs(10))).await.unwrap();
    let (events, mut told) = tokio::sync::mpsc::unbounded_channel();

    let result = server.call_with_events("lookup", Map::new(), Map::new(), events).await.unwrap();

    assert_eq!(result["content"][0]["text"], "polled");
    assert_eq!(*heard.resumed.lock().unwrap(), ["e-2"], "taken up after the last event seen");
    let call = heard.requests.lock().unwrap().iter().find(|(method, ..)| method == "tools/call").cloned().unwrap();
    assert_eq!(call, ("tools/call".into(), Some("s-1".into()), Some("2025-11-25".into())));
    until(|| !heard.answers.lock().unwrap().is_empty()).await;
    let answer = heard.answers.lock().unwrap()[0].clone();
    assert_eq!((answer["id"].clone(), answer["error"]["code"].clone()), (json!("q-1"), json!(-32601)), "{answer}");
    let Some(server::mcp::client::CallEvent::Progress { progress, total, message }) = told.recv().await else {
        panic!("no progress")
    };
    assert_eq!((progress, total, message.as_deref()), (1.0, Some(2.0), Some("halfway")));
}

/// What a hostile or broken server answers a call fails that call alone,
/// each with its cause, and at once: a message that is not JSON, a stream
/// that ends before the answer with nothing to take it up from, a JSON-RPC
/// error.
#[tokio::test]
async fn a_broken_answer_fails_the_call_with_its_cause() {
    let (url, _) = start_polling().await;
    let server = connect(endpoint(&url, &[], Duration::from_secs(10))).await.unwrap();

    let garbled = server.call("garbled", Map::new(), Map::new()).await.unwrap_err();
    let cut = server.call("cut", Map::new(), Map::new()).await.unwrap_err();
    let refused = server.call("refused", Map::new(), Map::new()).await.unwrap_err();

    assert!(matches!(&garbled, McpError::Protocol(why) if why.contains("not MCP")), "{garbled:?}");
    assert!(matches!(&cut, McpError::Unreachable(why) if why.contains("closed before its answer")), "{cut:?}");
    assert!(matches!(&refused, McpError::Failed(why) if why == "no such tool"), "{refused:?}");
}
