//! What one read costs the assistant over MCP against the Remote Tools
//! host (issue #30): the same `get` tool, answering the same text at once,
//! behind a Remote Tools host and behind an MCP server (rmcp's own server
//! side, Streamable HTTP), both in a child process of their own, called
//! through the engine's tool sources (`server::sources::Sources::read`) on
//! the kept connection, as a turn calls them. Reports, per read, the wall
//! time (p50, p90), this process's CPU time (the assistant's side) and
//! the child's (the server's side: the wall time holds both).
//!
//! Run: `scripts/bench-read.sh` (a release build); `valgrind
//! --tool=callgrind` on it counts the instructions of this process alone.

use std::io::{BufRead, Write};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Json;
use axum::routing::{get, post};
use rmcp::ServerHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ErrorData, Implementation, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::{Value, json};
use server::host::{ExecutionScope, HostClient, HostTarget};
use server::sources::{McpServer, Source, SourceKind, Sources};

/// Reads per kind of source, measured (after as many to warm up).
const READS: usize = 3000;
const ANSWER: &str = "42 in stock";

#[derive(Clone)]
struct Stock;

impl ServerHandler for Stock {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("stock", "1"))
    }

    async fn list_tools(
        &self,
        _: Option<PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let tool = json!({"name": "lookup", "description": "Look something up", "annotations": {"readOnlyHint": true},
                          "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}}});
        Ok(ListToolsResult { tools: vec![serde_json::from_value(tool).unwrap()], ..Default::default() })
    }

    async fn call_tool(
        &self,
        _: CallToolRequestParams,
        _: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let result: CallToolResult =
            serde_json::from_value(json!({"content": [{"type": "text", "text": ANSWER}]})).unwrap();
        Ok(result.into())
    }
}

/// The child: both servers on loopback, their ports on standard output,
/// until standard input closes.
async fn serve() {
    let remote = axum::Router::new()
        .route(
            "/tools",
            get(|| async {
                Json(json!({"tools": [{"name": "lookup", "description": "Look something up", "verb": "get",
                    "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}}}]}))
            }),
        )
        .route("/tools/execute", post(|| async { Json(json!({"output": {"text": ANSWER}})) }));
    // MCP_SERVER_JSON=1: stateless, each answer one `application/json`
    // body (the TypeScript SDK's `enableJsonResponse`); else the default, a
    // session and an event stream per request.
    let json = std::env::var("MCP_SERVER_JSON").is_ok();
    let mcp = StreamableHttpService::new(
        || Ok(Stock),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default().with_legacy_session_mode(!json).with_json_response(json),
    );
    let mcp = axum::Router::new().nest_service("/mcp", mcp);
    let listen = || tokio::net::TcpListener::bind("127.0.0.1:0");
    let (remote_listener, mcp_listener) = (listen().await.unwrap(), listen().await.unwrap());
    let ports = (remote_listener.local_addr().unwrap().port(), mcp_listener.local_addr().unwrap().port());
    // MCP_SERVER_NAGLE=1: the MCP server leaves Nagle's algorithm on, as
    // axum::serve does by default (Node's, Python's asyncio and Go's
    // servers turn it off; the stall it causes is measured with it).
    let nodelay = std::env::var("MCP_SERVER_NAGLE").is_err();
    use axum::serve::ListenerExt;
    let remote_listener = remote_listener.tap_io(|tcp| drop(tcp.set_nodelay(true)));
    let mcp_listener = mcp_listener.tap_io(move |tcp| drop(tcp.set_nodelay(nodelay)));
    tokio::spawn(async move { axum::serve(remote_listener, remote).await });
    tokio::spawn(async move { axum::serve(mcp_listener, mcp).await });
    println!("READY {} {}", ports.0, ports.1);
    std::io::stdout().flush().unwrap();
    tokio::task::spawn_blocking(|| {
        let mut line = String::new();
        let _ = std::io::stdin().read_line(&mut line);
    })
    .await
    .unwrap();
}

/// A process's CPU time so far (user and system), from /proc: `self`'s
/// or the servers' child's (its pid).
fn cpu_time(process: &str) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{process}/stat")).unwrap();
    let fields: Vec<&str> = stat.rsplit(')').next().unwrap().split_whitespace().collect();
    // After the command: state is field 3, utime 14 and stime 15 (1-based).
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    Duration::from_secs_f64(ticks as f64 / 100.0)
}

fn percentile(times: &mut [Duration], p: f64) -> Duration {
    times.sort();
    times[((times.len() - 1) as f64 * p).round() as usize]
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    if std::env::args().nth(1).as_deref() == Some("serve") {
        return serve().await;
    }
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .arg("serve")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut ready = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap()).read_line(&mut ready).unwrap();
    let ports: Vec<u16> = ready.split_whitespace().skip(1).map(|p| p.parse().unwrap()).collect();

    let timeout = Duration::from_secs(10);
    let sources = Sources::new(HostClient::new(timeout, true), true);
    let source = |name: &str, url: String, kind: SourceKind| Source {
        workspace_id: "ws_bench".into(),
        name: name.into(),
        url,
        version: 1,
        allowed_tools: Vec::new(),
        kind,
    };
    let remote_url = format!("http://127.0.0.1:{}/", ports[0]);
    let remote = source(
        "generic-rest",
        remote_url.clone(),
        SourceKind::Remote(HostTarget {
            base_url: url::Url::parse(&remote_url).unwrap(),
            secret: server::secret::Secret::new("bench-secret".to_owned()),
            trusted: false,
        }),
    );
    let mcp_url = format!("http://127.0.0.1:{}/mcp", ports[1]);
    let mcp = source(
        "stock",
        mcp_url.clone(),
        SourceKind::Mcp(McpServer {
            url: url::Url::parse(&mcp_url).unwrap(),
            headers: Vec::new(),
            trust_annotations: true,
            verbs: Default::default(),
        }),
    );
    let scope = ExecutionScope {
        workspace_id: "ws_bench".into(),
        external_user_id: "bench".into(),
        permissions: Vec::new(),
        request_id: "req_bench".into(),
    };
    let arguments = json!({"q": "socks"});

    println!("| source | reads | wall time per read p50 / p90 | assistant CPU per read | server CPU per read |");
    println!("|---|---|---|---|---|");
    let server = child.id().to_string();
    // READS_ONLY=remote or =mcp measures one kind alone (for callgrind).
    let only = std::env::var("READS_ONLY").ok();
    for source in [&remote, &mcp] {
        let kind = if source.is_remote() { "remote" } else { "mcp" };
        if only.as_deref().is_some_and(|o| o != kind) {
            continue;
        }
        let tools = sources.tools(source, &scope).await.unwrap();
        let tool = tools.iter().find(|t| t.name == "lookup").unwrap();
        let read = async || {
            // As the engine reads: a channel for what an MCP server tells.
            let events = source.tells_while_running().then(|| tokio::sync::mpsc::unbounded_channel().0);
            let output: Value =
                sources.read(source, tool, "call_bench", &arguments, &scope, events).await.unwrap().output;
            assert_eq!(output["text"], ANSWER);
        };
        for _ in 0..READS {
            read().await;
        }
        let mut times = Vec::with_capacity(READS);
        let (cpu, server_cpu) = (cpu_time("self"), cpu_time(&server));
        for _ in 0..READS {
            let started = Instant::now();
            read().await;
            times.push(started.elapsed());
        }
        let (cpu, server_cpu) = (cpu_time("self") - cpu, cpu_time(&server) - server_cpu);
        let us = |d: Duration| d.as_secs_f64() * 1e6;
        println!(
            "| {} | {READS} | {:.0} / {:.0} µs | {:.0} µs | {:.0} µs |",
            if source.is_remote() { "Remote Tools host" } else { "MCP server (Streamable HTTP)" },
            us(percentile(&mut times, 0.5)),
            us(percentile(&mut times, 0.9)),
            us(cpu) / READS as f64,
            us(server_cpu) / READS as f64,
        );
    }
    drop(child.stdin.take());
    let _ = child.wait();
}
