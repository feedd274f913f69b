//! Open streams on one node: the release server binary, as a process of
//! its own, carries N turns at once, every one of them streaming to its
//! client while it waits on a slow tool. This process is the load: one
//! async task per stream (not a thread), the tool host that holds every
//! call until all N are waiting (and at least `HOLD`), and a model that
//! asks for the tool, then answers.
//!
//! For each level it reports the server's resident memory per open stream
//! (at the plateau, all N waiting, above the idle process), the CPU the
//! waiting streams cost (server CPU per second over the plateau), the file
//! descriptors it holds, and how every turn ended: completed, refused with
//! `503` and `Retry-After` (what the node sheds beyond its capacity), or
//! anything else (a failure: must be 0).
//!
//! `STREAMS_HOST=h2`: the tool host speaks HTTP/2 over TLS (its own CA,
//! given to the server as `CA_TOOL_HOSTS_CA_FILE`), so the server's calls
//! share connections; otherwise plain HTTP/1.1, a connection a call.
//!
//! Run: `scripts/streams.sh [LEVELS]` (default 1000,5000,10000).

#[path = "common/mod.rs"]
mod common;
#[path = "../tls_host.rs"]
mod tls_host;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use axum::Json;
use axum::routing::{get, post};
use common::{cpu_ms, rss_kib};
use futures::StreamExt;
use serde_json::{Value, json};
use tokio::sync::watch;

/// The plateau: every stream waiting on the tool, this long at least.
const HOLD: Duration = Duration::from_secs(5);
/// Time for the server's writes of the ramp to drain before the plateau
/// is measured.
const SETTLE: Duration = Duration::from_secs(2);
/// New streams opened per second while a level ramps up (the listen
/// backlog and the loopback's SYN queue take bursts of about this size).
const OPEN_PER_SECOND: u64 = 4_000;

/// The tool calls now waiting, and the gate that lets them all answer.
struct Gate {
    waiting: AtomicU64,
    open: watch::Sender<bool>,
}

#[tokio::main]
async fn main() {
    let mut args = std::env::args().skip(1);
    let binary = args.next().expect("usage: streams <server binary> [levels] [capacity]");
    let levels: Vec<u64> = args
        .next()
        .unwrap_or_else(|| "1000,5000,10000".into())
        .split(',')
        .map(|n| n.parse().expect("a number"))
        .collect();
    let capacity: u64 = args.next().map_or(10_000, |n| n.parse().expect("a number"));
    // Each stream is two sockets here over HTTP/1.1 (the client's, and the
    // tool host's end of the server's call), one over HTTP/2 (the calls
    // share a connection per 100), and the model's end of a few hundred.
    let h2 = std::env::var("STREAMS_HOST").is_ok_and(|h| h == "h2");
    let files = rlimit::increase_nofile_limit(u64::MAX).expect("the file limit can be read");
    let most = levels.iter().copied().max().unwrap_or(0);
    let sockets = if h2 { most + most / 100 } else { 2 * most };
    assert!(files > sockets + 1024, "this process may open only {files} files: raise `ulimit -Hn` or ask for fewer");

    let gate = Arc::new(Gate { waiting: AtomicU64::new(0), open: watch::channel(false).0 });
    let ca = tls_host::TestCa::new("streams bench CA");
    let ca_dir = tempfile::tempdir().unwrap();
    let ca_file = ca_dir.path().join("ca.pem");
    std::fs::write(&ca_file, ca.pem()).unwrap();
    let host = if h2 {
        let (address, _) = tls_host::serve_tls(&ca, tls_host::Alpn::H2, slow_host(gate.clone())).await;
        format!("https://{address}")
    } else {
        format!("http://{}", common::serve(slow_host(gate.clone())).await)
    };
    let model = common::lookup_model(1).await;
    println!(
        "server: {binary}; CA_MAX_CONCURRENT_TURNS = CA_MAX_OPEN_STREAMS = {capacity}; a fresh server per level; tool host {}",
        if h2 { "HTTP/2 over TLS" } else { "HTTP/1.1" }
    );
    println!(
        "| streams asked | open at once | resident memory per open stream | CPU while they wait | server files open | completed | refused (503 + Retry-After) | failed |"
    );
    println!("|---|---|---|---|---|---|---|---|");

    for (level, &streams) in levels.iter().enumerate() {
        let data = tempfile::tempdir().unwrap();
        let port = common::free_port();
        let mut vars: Vec<(&str, String)> =
            common::LIMITS_THAT_COUNT.iter().map(|(k, v)| (*k, v.to_string())).collect();
        vars.extend([
            ("CA_DATA_DIR", data.path().display().to_string()),
            ("CA_MAX_CONCURRENT_TURNS", capacity.to_string()),
            ("CA_MAX_OPEN_STREAMS", capacity.to_string()),
            // A tool call may wait as long as the plateau lasts.
            ("CA_TOOL_TIMEOUT_MS", "120000".into()),
            ("CA_TURN_TIMEOUT_MS", "300000".into()),
            ("CA_TOOL_HOSTS_CA_FILE", ca_file.display().to_string()),
        ]);
        let mut server = common::start_server(&binary, &[], port, model, &vars);
        let base = format!("http://127.0.0.1:{port}");
        let client = reqwest::Client::builder().pool_max_idle_per_host(usize::MAX).build().unwrap();
        common::wait_ready(&client, &base, Duration::from_secs(10)).await;
        let (workspace, secret) = common::connected_workspace_at(&client, &base, &host).await;
        let pid = server.id();
        if level == 0 {
            eprintln!("the server's file limit: {}", nofile_limit(pid));
        }
        gate.waiting.store(0, Ordering::SeqCst);
        gate.open.send_replace(false);
        let idle_rss = rss_kib(pid);
        let outcomes = Arc::new(Outcomes::default());
        let started = Instant::now();
        let tasks: Vec<_> = (0..streams)
            .map(|i| {
                let (client, outcomes) = (client.clone(), outcomes.clone());
                let token = server::auth::mint(&workspace, &secret, &format!("s{level}_{i}"), &[], 3600);
                let url = format!("{base}/v1/chat/turns");
                let at = started + Duration::from_micros(i * 1_000_000 / OPEN_PER_SECOND);
                tokio::spawn(async move {
                    tokio::time::sleep_until(at.into()).await;
                    one_turn(&client, &url, &token, &outcomes).await;
                })
            })
            .collect();

        // The plateau: every stream the server took is waiting on the tool.
        let ramp = Duration::from_micros(streams * 1_000_000 / OPEN_PER_SECOND) + Duration::from_secs(30);
        let deadline = Instant::now() + ramp;
        while gate.waiting.load(Ordering::SeqCst) + outcomes.refused.load(Ordering::SeqCst) < streams
            && outcomes.failed.load(Ordering::SeqCst) == 0
            && Instant::now() < deadline
        {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let open = gate.waiting.load(Ordering::SeqCst);
        // The calls can all reach the host before the server has written
        // what the turns did so far (their steps, the calls' start): a
        // backlog of writes, not waiting streams. Measured after it.
        tokio::time::sleep(SETTLE).await;
        // For a profiler that should stop the server where the streams wait.
        eprintln!("plateau: {open} streams waiting on the tool");
        let cpu_before = cpu_ms(pid);
        let plateau = Instant::now();
        let mut peak = 0;
        while plateau.elapsed() < HOLD {
            peak = peak.max(rss_kib(pid));
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        let cpu_per_second = (cpu_ms(pid) - cpu_before) / plateau.elapsed().as_secs_f64();
        let files = open_files(pid);
        gate.open.send_replace(true);
        futures::future::join_all(tasks).await;

        let per_stream = peak.saturating_sub(idle_rss) as f64 / open.max(1) as f64;
        println!(
            "| {streams} | {open} | {per_stream:.1} KiB | {cpu_per_second:.1} ms/s | {files} | {} | {} | {} |",
            outcomes.completed.load(Ordering::SeqCst),
            outcomes.refused.load(Ordering::SeqCst),
            outcomes.failed.load(Ordering::SeqCst),
        );
        common::terminate(&mut server);
    }
}

#[derive(Default)]
struct Outcomes {
    completed: AtomicU64,
    refused: AtomicU64,
    failed: AtomicU64,
}

/// One turn, its stream read to the end: completed, refused with `503`
/// and `Retry-After`, or failed (anything else).
async fn one_turn(client: &reqwest::Client, url: &str, token: &str, outcomes: &Outcomes) {
    let response = client.post(url).bearer_auth(token).json(&json!({"message": "look it up"})).send().await;
    let outcome = match response {
        Ok(response) if response.status() == 503 && response.headers().contains_key("retry-after") => &outcomes.refused,
        Ok(response) if response.status() == 200 => {
            let mut body = response.bytes_stream();
            let mut tail = Vec::new();
            let mut broken = false;
            while let Some(chunk) = body.next().await {
                match chunk {
                    Ok(chunk) => {
                        tail.extend_from_slice(&chunk);
                        // Only the end matters: keep the client's own memory small.
                        if tail.len() > 4096 {
                            tail.drain(..tail.len() - 1024);
                        }
                    }
                    Err(_) => broken = true,
                }
            }
            let ended = String::from_utf8_lossy(&tail).contains(r#""stop_reason":"completed""#);
            if ended && !broken { &outcomes.completed } else { &outcomes.failed }
        }
        Ok(response) => {
            eprintln!("turn answered {}", response.status());
            &outcomes.failed
        }
        Err(error) => {
            eprintln!("turn failed: {error}");
            &outcomes.failed
        }
    };
    outcome.fetch_add(1, Ordering::SeqCst);
}

/// A tool host whose `lookup` answers only once the gate opens and
/// [`HOLD`] has passed since the call came — a turn's call: the contract
/// checker's (run when the bench connects the host) is answered at once.
fn slow_host(gate: Arc<Gate>) -> axum::Router {
    let execute = move |Json(body): Json<Value>| {
        let gate = gate.clone();
        async move {
            let answer = Json(
                json!({"output": {"status": "ok", "display": [{"title": "A result", "url": "https://example.com/a"}]}}),
            );
            if body["execution"]["externalUserId"] == server::checker::CHECK_USER {
                return answer;
            }
            let came = Instant::now();
            let mut open = gate.open.subscribe();
            gate.waiting.fetch_add(1, Ordering::SeqCst);
            let _ = open.wait_for(|open| *open).await;
            tokio::time::sleep_until((came + HOLD).into()).await;
            answer
        }
    };
    axum::Router::new()
        .route(
            "/tools",
            get(|| async {
                Json(json!({"tools": [{"name": "lookup", "verb": "get",
            "description": "Look up", "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}}}]}))
            }),
        )
        .route("/context", get(|| async { Json(json!({"page": "bench"})) }))
        .route("/tools/execute", post(execute))
}

/// The soft file limit of process `pid` (`/proc/PID/limits`).
fn nofile_limit(pid: u32) -> String {
    let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).unwrap_or_default();
    limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .and_then(|l| l.split_whitespace().nth(3))
        .unwrap_or("?")
        .to_owned()
}

/// How many files process `pid` holds open.
fn open_files(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count())
}
