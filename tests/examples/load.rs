//! Load script: ramps concurrent streaming turns against the release server
//! binary, run as its own process on loopback with a tool host and a model
//! that stream at a steady pace (this process). Bounded in time per level.
//! For each level it reports turns/s, p50/p99 time to the first event,
//! the server's CPU per completed turn (from /proc), its resident memory
//! per open stream, and how many turns it shed (`503`) or limited.
//!
//! Run: `scripts/load.sh` (it builds the release binary first).

#[path = "common/mod.rs"]
mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use axum::Json;
use axum::body::Body;
use axum::response::IntoResponse;
use axum::routing::{get, post};
use common::{cpu_ms, ms, percentile, rss_kib, serve};
use futures::StreamExt;
use serde_json::{Value, json};

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
    let port = common::free_port();
    let cap = std::env::var("LOAD_MAX_CONCURRENT_TURNS").unwrap_or_else(|_| "100".into());
    let mut vars: Vec<(&str, String)> = common::LIMITS_THAT_COUNT.iter().map(|(k, v)| (*k, v.to_string())).collect();
    vars.extend([("CA_DATA_DIR", data.path().display().to_string()), ("CA_MAX_CONCURRENT_TURNS", cap.clone())]);
    let mut server = common::start_server(&binary, &[], port, model, &vars);
    let base = format!("http://127.0.0.1:{port}");
    let client = reqwest::Client::builder().pool_max_idle_per_host(1000).build().unwrap();
    common::wait_ready(&client, &base, Duration::from_secs(10)).await;
    let (workspace, secret) = common::connected_workspace(&client, &base, host).await;

    let pid = server.id();
    let idle_rss = rss_kib(pid);
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
            let token = server::auth::mint(&workspace, &secret, &format!("load_{w}"), &[], 3600);
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
    common::stop(&mut server);
}

#[derive(Default)]
struct Outcomes {
    completed: u64,
    shed: u64,
    failed: u64,
    first_event: Vec<Duration>,
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
