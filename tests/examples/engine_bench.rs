//! Engine benchmark: turns against zero-latency fakes (a tool host and an
//! OpenAI-compatible model on loopback that answer at once), through the
//! real HTTP API, on SQLite. Reports the time per engine iteration (p50,
//! p99; it includes the loopback HTTP to both fakes and the database writes,
//! so it is an upper bound of the engine's own overhead) and turns per
//! second at 1, 10 and 100 concurrent conversations. "Engine time" is the
//! loop's own time per iteration: its wall time less the time spent waiting
//! for the model and the tool host (server::engine::metrics).
//!
//! Run: `scripts/bench-engine.sh` (a release build).

#[path = "common/mod.rs"]
mod common;

use std::time::{Duration, Instant};

use common::percentile;
use serde_json::json;

/// Tool steps per turn before the model answers in text.
const TOOL_STEPS: usize = 3;

#[tokio::main]
async fn main() {
    if std::env::var_os("RUST_LOG").is_some() {
        server::telemetry::init(server::telemetry::LogFormat::Text);
    }
    let host = common::lookup_host().await;
    let model = common::lookup_model(TOOL_STEPS).await;

    let data = tempfile::tempdir().unwrap();
    // BENCH_DATABASE_URL (an empty PostgreSQL database) instead of a fresh SQLite file.
    let database = std::env::var("BENCH_DATABASE_URL")
        .unwrap_or_else(|_| format!("sqlite://{}?mode=rwc", data.path().join("bench.db").display()));
    println!("database: {}", database.split(':').next().unwrap_or_default());
    let mut vars: Vec<(&str, String)> = common::LIMITS_THAT_COUNT.iter().map(|(k, v)| (*k, v.to_string())).collect();
    vars.extend([
        ("DATABASE_URL", database),
        ("LEPTOS_SITE_ADDR", "127.0.0.1:0".to_string()),
        ("CA_DATA_DIR", data.path().display().to_string()),
        ("CA_ADMIN_TOKEN", common::ADMIN.into()),
        ("CA_ALLOW_PRIVATE_TOOL_HOSTS", "1".into()),
        ("OPENAI_BASE_URL", format!("http://{model}/v1")),
        ("CA_MAX_ITERATIONS", (TOOL_STEPS + 1).to_string()),
        ("CA_MAX_CONCURRENT_TURNS", "100000".into()),
    ]);
    let config = server::config::Config::from_lookup(|n| vars.iter().find(|(k, _)| *k == n).map(|(_, v)| v.clone()))
        .expect("valid configuration");
    let app = server::app::Application::build(config).await.expect("the server starts");
    let base = format!("http://{}", app.address());
    tokio::spawn(app.run_until_stopped());

    let client = reqwest::Client::builder().pool_max_idle_per_host(200).build().unwrap();
    let (workspace, secret) = common::connected_workspace(&client, &base, host).await;

    // Warm up connections, caches and the database.
    run(&client, &base, &workspace, &secret, 4, 20).await;

    println!(
        "| concurrent conversations | turns | turns/s | engine time per iteration p50 / p99 | \
         turn time per iteration p50 / p99 |"
    );
    println!("|---|---|---|---|---|");
    let levels: Vec<(usize, usize)> = match std::env::var("BENCH_QUICK") {
        Ok(_) => vec![(1, 5)],
        Err(_) => vec![(1, 200), (10, 500), (100, 1000)],
    };
    for (concurrency, turns) in levels {
        server::engine::metrics::start_collecting();
        let started = Instant::now();
        let mut per_iteration = run(&client, &base, &workspace, &secret, concurrency, turns).await;
        let elapsed = started.elapsed();
        let mut engine = server::engine::metrics::take();
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        println!(
            "| {concurrency} | {turns} | {:.0} | {:.3} / {:.3} ms | {:.2} / {:.2} ms |",
            turns as f64 / elapsed.as_secs_f64(),
            ms(percentile(&mut engine, 0.50)),
            ms(percentile(&mut engine, 0.99)),
            ms(percentile(&mut per_iteration, 0.50)),
            ms(percentile(&mut per_iteration, 0.99)),
        );
    }
}

/// Runs `turns` turns, `concurrency` at a time; returns each turn's time
/// divided by its iterations.
async fn run(
    client: &reqwest::Client,
    base: &str,
    workspace: &str,
    secret: &str,
    concurrency: usize,
    turns: usize,
) -> Vec<Duration> {
    let per_worker = turns / concurrency;
    let workers = (0..concurrency).map(|w| {
        let client = client.clone();
        let token = server::auth::mint(workspace, secret, &format!("bench_{w}"), &[], 3600);
        let url = format!("{base}/v1/chat/turns");
        async move {
            let mut times = Vec::with_capacity(per_worker);
            for _ in 0..per_worker {
                let started = Instant::now();
                let body = client
                    .post(&url)
                    .bearer_auth(&token)
                    .json(&json!({"message": "look it up"}))
                    .send()
                    .await
                    .unwrap()
                    .text()
                    .await
                    .unwrap();
                assert!(body.contains(r#""stop_reason":"completed""#), "{body}");
                times.push(started.elapsed() / (TOOL_STEPS as u32 + 1));
            }
            times
        }
    });
    futures::future::join_all(workers).await.into_iter().flatten().collect()
}
