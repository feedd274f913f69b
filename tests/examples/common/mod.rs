//! What the benchmark scripts share: fakes on loopback, the server binary as
//! a process of its own, a workspace connected to the fake host, and the
//! process's CPU time and memory from `/proc`.

#![allow(dead_code)] // each example uses its own part of this

use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use axum::Json;
use axum::response::IntoResponse;
use axum::routing::{get, post};
use serde_json::{Value, json};

pub const ADMIN: &str = "bench-admin-token-of-at-least-32-characters";

/// The limits count every turn (each is checked) but never refuse.
pub const LIMITS_THAT_COUNT: [(&str, &str); 5] = [
    ("CA_TURNS_PER_USER_PER_MINUTE", "1000000000"),
    ("CA_TURNS_PER_IP_PER_MINUTE", "1000000000"),
    ("CA_TURNS_PER_WORKSPACE_PER_MINUTE", "1000000000"),
    ("CA_WORKSPACE_DAILY_TOKENS", "1000000000000"),
    ("CA_USER_DAILY_TOKENS", "1000000000"),
];

pub async fn serve(router: axum::Router) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    // As Node's, Python's asyncio and Go's servers do: no Nagle delay on
    // a streamed answer's small writes over a kept connection.
    let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| drop(tcp.set_nodelay(true)));
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    address
}

/// A tool host that answers at once: one `get` tool, `lookup`, whose
/// result is one link card.
pub async fn lookup_host() -> SocketAddr {
    serve(
        axum::Router::new()
            .route("/tools", get(|| async { Json(json!({"tools": [{"name": "lookup", "verb": "get",
                "description": "Look up", "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}}}]})) }))
            .route("/context", get(|| async { Json(json!({"page": "bench"})) }))
            .route("/tools/execute", post(|| async {
                Json(json!({"output": {"status": "ok", "display": [{"title": "A result", "url": "https://example.com/a"}]}}))
            })),
    )
    .await
}

/// An OpenAI-compatible model that answers at once: it calls `lookup`
/// until it has seen `tool_steps` results since the user spoke, then
/// answers in text. Stateless, so any number of turns can run.
pub async fn lookup_model(tool_steps: usize) -> SocketAddr {
    serve(axum::Router::new().route("/v1/chat/completions", post(move |body| lookup_step(body, tool_steps)))).await
}

async fn lookup_step(Json(body): Json<Value>, tool_steps: usize) -> impl IntoResponse {
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let since_user = messages.iter().rev().take_while(|m| m["role"] != "user").filter(|m| m["role"] == "tool").count();
    let chunk = |delta: Value, finish: Option<&str>| {
        format!(
            "data: {}\n\n",
            json!({"id": "b", "object": "chat.completion.chunk", "created": 1, "model": "bench",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
        )
    };
    let mut out = String::new();
    if since_user < tool_steps {
        out.push_str(&chunk(
            json!({"tool_calls": [{"index": 0, "id": format!("call_{since_user}"), "type": "function",
            "function": {"name": "lookup", "arguments": "{\"q\":\"x\"}"}}]}),
            None,
        ));
        out.push_str(&chunk(json!({}), Some("tool_calls")));
    } else {
        out.push_str(&chunk(json!({"content": "Here is what I found."}), None));
        out.push_str(&chunk(json!({}), Some("stop")));
    }
    out.push_str("data: {\"id\":\"b\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"bench\",\"choices\":[],\"usage\":{\"prompt_tokens\":100,\"completion_tokens\":10,\"total_tokens\":110}}\n\ndata: [DONE]\n\n");
    ([("content-type", "text/event-stream")], out)
}

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// The server binary with a clean environment: `vars` on top of the ones
/// every benchmark needs. `wrapper` runs it under another program
/// (valgrind). Its output goes nowhere, unless `BENCH_SERVER_LOG` names a
/// `RUST_LOG` filter: then its logs go to `BENCH_SERVER_LOG_FILE` (default
/// `server.log`), to see what a turn does (`sqlx::query=debug` lists its
/// statements).
pub fn start_server(binary: &str, wrapper: &[String], port: u16, model: SocketAddr, vars: &[(&str, String)]) -> Child {
    let (program, args) = match wrapper.split_first() {
        Some((program, rest)) => (program.as_str(), rest.iter().map(String::as_str).chain([binary]).collect()),
        None => (binary, Vec::new()),
    };
    let mut command = Command::new(program);
    command
        .args(args)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("LEPTOS_SITE_ADDR", format!("127.0.0.1:{port}"))
        .env("CA_ADMIN_TOKEN", ADMIN)
        .env("CA_ALLOW_PRIVATE_TOOL_HOSTS", "1")
        .env("OPENAI_BASE_URL", format!("http://{model}/v1"))
        .env("OPENAI_API_KEY", "bench")
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    for (name, value) in vars {
        command.env(name, value);
    }
    if let Ok(filter) = std::env::var("BENCH_SERVER_LOG") {
        let file = std::env::var("BENCH_SERVER_LOG_FILE").unwrap_or_else(|_| "server.log".into());
        let log = std::fs::File::create(&file).expect("the log file can be created");
        command.env("RUST_LOG", filter).stdout(log.try_clone().unwrap()).stderr(log);
    }
    command.spawn().expect("the server binary starts")
}

pub async fn wait_ready(client: &reqwest::Client, base: &str, within: Duration) {
    let deadline = std::time::Instant::now() + within;
    while std::time::Instant::now() < deadline {
        if client.get(format!("{base}/ready")).send().await.is_ok_and(|r| r.status().is_success()) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the server did not become ready");
}

/// A new workspace connected to the tool host: its id and embed secret.
pub async fn connected_workspace(client: &reqwest::Client, base: &str, host: SocketAddr) -> (String, String) {
    connected_workspace_at(client, base, &format!("http://{host}")).await
}

/// [`connected_workspace`] for a host at `host_url` (an `https://` one, say).
pub async fn connected_workspace_at(client: &reqwest::Client, base: &str, host_url: &str) -> (String, String) {
    let created: Value = client
        .post(format!("{base}/v1/workspaces"))
        .bearer_auth(ADMIN)
        .json(&json!({"name": "bench"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    client
        .post(format!("{base}/v1/integrations/generic-rest/connect"))
        .bearer_auth(created["api_key"].as_str().unwrap())
        .json(&json!({"base_url": host_url, "secret": "s"}))
        .send()
        .await
        .unwrap()
        .error_for_status()
        .unwrap();
    (created["id"].as_str().unwrap().to_owned(), created["embed_secret"].as_str().unwrap().to_owned())
}

pub fn stop(server: &mut Child) {
    let _ = server.kill();
    let _ = server.wait();
}

/// Asks the server to stop as an operator would (SIGTERM) and waits.
pub fn terminate(server: &mut Child) {
    let _ = Command::new("kill").args(["-TERM", &server.id().to_string()]).status();
    let _ = server.wait();
}

pub fn percentile(samples: &mut [Duration], p: f64) -> Duration {
    samples.sort();
    samples.get(((samples.len() as f64 * p) as usize).min(samples.len().saturating_sub(1))).copied().unwrap_or_default()
}

pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// The process's user + system CPU time, in milliseconds (`/proc/PID/stat`).
pub fn cpu_ms(pid: u32) -> f64 {
    let (user, system) = user_system_ms(pid);
    user + system
}

/// The process's user and system CPU time apart, in milliseconds.
pub fn user_system_ms(pid: u32) -> (f64, f64) {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let after_name = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    let ms = |i: usize| fields.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0) * 1000.0 / 100.0; // USER_HZ is 100
    (ms(11), ms(12))
}

/// Resident memory in KiB (`/proc/PID/status`).
pub fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}
