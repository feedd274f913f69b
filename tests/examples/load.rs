//! Load script: ramps concurrent streaming turns against the release server
//! binary, run as its own process on loopback with a tool host and a model
//! that stream at a steady pace (this process). Bounded in time per level.
//! For each level it reports turns/s, p50/p99 time to the first event,
//! the server's CPU per completed turn (from /proc), its resident memory
//! per open stream, and how many turns it shed (`503`) or limited.
//!
//! Run: `scripts/load.sh` (it builds the release binary first).

use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use axum::Json;
use axum::body::Body;
use axum::response::IntoResponse;
use axum::routing::{get, post};
use futures::StreamExt;
use serde_json::{Value, json};

const ADMIN: &str = "load-admin-token-of-at-least-32-characters";
/// Each level runs this long.
const LEVEL_TIME: Duration = Duration::from_secs(6);
/// The model streams this many pieces, this far apart: a turn holds its
/// stream open about half a second, like a short real answer.
const PIECES: usize = 10;
const PIECE_GAP: Duration = Duration::from_millis(50);

#[tokio::main]
async fn main() {
    let binary = std::env::args().nth(1).expect("usage: load <server binary> [levels]");
    let levels: Vec<usize> = std::env::args()
        .nth(2)
        .unwrap_or_else(|| "1,10,50,100,200,400".into())
        .split(',')
        .map(|n| n.parse().expect("a number"))
        .collect();
    let host = serve(
        axum::Router::new()
            .route("/tools", get(|| async { Json(json!({"tools": []})) }))
            .route("/context", get(|| async { Json(json!({})) })),
    )
    .await;
    let model = serve(axum::Router::new().route("/v1/chat/completions", post(model))).await;
    let data = tempfile::tempdir().unwrap();
    let port = free_port();
    let mut server = Command::new(&binary)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("LEPTOS_SITE_ADDR", format!("127.0.0.1:{port}"))
        .env("CA_DATA_DIR", data.path())
        .env("CA_ADMIN_TOKEN", ADMIN)
        .env("CA_ALLOW_PRIVATE_TOOL_HOSTS", "1")
        .env("OPENAI_BASE_URL", format!("http://{model}/v1"))
        .env("OPENAI_API_KEY", "load")
        .env("CA_TURNS_PER_USER_PER_MINUTE", "1000000000")
        .env("CA_TURNS_PER_IP_PER_MINUTE", "1000000000")
        .env("CA_TURNS_PER_WORKSPACE_PER_MINUTE", "1000000000")
        .env("CA_WORKSPACE_DAILY_TOKENS", "0")
        .env("CA_MAX_CONCURRENT_TURNS", std::env::var("LOAD_MAX_CONCURRENT_TURNS").unwrap_or_else(|_| "100".into()))
        .env("RUST_LOG", "error")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("the server binary starts");
    let base = format!("http://127.0.0.1:{port}");
    let client = reqwest::Client::builder().pool_max_idle_per_host(1000).build().unwrap();
    wait_ready(&client, &base).await;
    let created: Value = client
        .post(format!("{base}/v1/workspaces"))
        .bearer_auth(ADMIN)
        .json(&json!({"name": "load"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    client
        .post(format!("{base}/v1/integrations/generic-rest/connect"))
        .bearer_auth(created["api_key"].as_str().unwrap())
        .json(&json!({"base_url": format!("http://{host}"), "secret": "s"}))
        .send()
        .await
        .unwrap()
        .error_for_status()
        .unwrap();
    let (workspace, secret) = (created["id"].as_str().unwrap(), created["embed_secret"].as_str().unwrap());

    let pid = server.id();
    let idle_rss = rss_kib(pid);
    let cap = std::env::var("LOAD_MAX_CONCURRENT_TURNS").unwrap_or_else(|_| "100".into());
    println!("server: {binary}; CA_MAX_CONCURRENT_TURNS={cap}; idle resident memory {} MiB", idle_rss / 1024);
    println!(
        "| concurrent streams | turns/s | first event p50 / p99 | server CPU per turn | resident memory per open stream | shed (503) | other failures |"
    );
    println!("|---|---|---|---|---|---|---|");
    for concurrency in levels {
        let cpu_before = cpu_ms(pid);
        let peak = Arc::new(AtomicU64::new(0));
        let sampler = {
            let peak = peak.clone();
            tokio::spawn(async move {
                loop {
                    peak.fetch_max(rss_kib(pid), Ordering::Relaxed);
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            })
        };
        let deadline = Instant::now() + LEVEL_TIME;
        let workers = (0..concurrency).map(|w| {
            let client = client.clone();
            let token = server::auth::mint(workspace, secret, &format!("load_{w}"), &[], 3600);
            let url = format!("{base}/v1/chat/turns");
            async move {
                let mut out = Outcomes::default();
                while Instant::now() < deadline {
                    let started = Instant::now();
                    let response = client.post(&url).bearer_auth(&token).json(&json!({"message": "hi"})).send().await;
                    let Ok(response) = response else {
                        out.failed += 1;
                        continue;
                    };
                    match response.status().as_u16() {
                        200 => {}
                        503 => {
                            out.shed += 1;
                            tokio::time::sleep(Duration::from_millis(200)).await;
                            continue;
                        }
                        _ => {
                            out.failed += 1;
                            continue;
                        }
                    }
                    let mut body = response.bytes_stream();
                    let mut text = Vec::new();
                    let mut first = None;
                    while let Some(Ok(chunk)) = body.next().await {
                        first.get_or_insert_with(|| started.elapsed());
                        text.extend_from_slice(&chunk);
                    }
                    if String::from_utf8_lossy(&text).contains(r#""stop_reason":"completed""#) {
                        out.first_event.extend(first);
                        out.completed += 1;
                    } else {
                        out.failed += 1;
                    }
                }
                out
            }
        });
        let started = Instant::now();
        let results = futures::future::join_all(workers).await;
        let elapsed = started.elapsed();
        sampler.abort();
        let cpu = cpu_ms(pid) - cpu_before;
        let mut all = Outcomes::default();
        for r in results {
            all.completed += r.completed;
            all.shed += r.shed;
            all.failed += r.failed;
            all.first_event.extend(r.first_event);
        }
        let per_stream = peak.load(Ordering::Relaxed).saturating_sub(idle_rss) as f64 / concurrency as f64;
        println!(
            "| {concurrency} | {:.0} | {:.1} / {:.1} ms | {:.2} ms | {:.0} KiB | {} | {} |",
            all.completed as f64 / elapsed.as_secs_f64(),
            ms(percentile(&mut all.first_event, 0.50)),
            ms(percentile(&mut all.first_event, 0.99)),
            cpu / all.completed.max(1) as f64,
            per_stream,
            all.shed,
            all.failed,
        );
    }
    stop(&mut server);
}

#[derive(Default)]
struct Outcomes {
    completed: u64,
    shed: u64,
    failed: u64,
    first_event: Vec<Duration>,
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn percentile(samples: &mut [Duration], p: f64) -> Duration {
    samples.sort();
    samples.get(((samples.len() as f64 * p) as usize).min(samples.len().saturating_sub(1))).copied().unwrap_or_default()
}

/// The process's user + system CPU time, in milliseconds (`/proc/PID/stat`).
fn cpu_ms(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let after_name = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    let ticks: f64 = fields.get(11..13).map_or(0.0, |f| f.iter().filter_map(|v| v.parse::<f64>().ok()).sum());
    ticks * 1000.0 / 100.0 // USER_HZ is 100 on Linux
}

/// Resident memory in KiB (`/proc/PID/status`).
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

async fn wait_ready(client: &reqwest::Client, base: &str) {
    for _ in 0..200 {
        if client.get(format!("{base}/ready")).send().await.is_ok_and(|r| r.status().is_success()) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the server did not become ready");
}

fn stop(server: &mut Child) {
    let _ = server.kill();
    let _ = server.wait();
}

/// A model that answers in `PIECES` text pieces, `PIECE_GAP` apart.
async fn model(Json(_): Json<Value>) -> impl IntoResponse {
    let pieces = futures::stream::iter(0..=PIECES).then(|i| async move {
        if i > 0 {
            tokio::time::sleep(PIECE_GAP).await;
        }
        let data = if i < PIECES {
            json!({"choices": [{"index": 0, "delta": {"content": "word "}}]}).to_string()
        } else {
            json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
                   "usage": {"prompt_tokens": 50, "completion_tokens": 10}})
            .to_string()
        };
        Ok::<_, std::convert::Infallible>(format!("data: {data}\n\n"))
    });
    ([("content-type", "text/event-stream")], Body::from_stream(pieces))
}

async fn serve(router: axum::Router) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    address
}
