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

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use axum::Json;
use axum::response::IntoResponse;
use axum::routing::{get, post};
use serde_json::{Value, json};

/// Tool steps per turn before the model answers in text.
const TOOL_STEPS: usize = 3;
const BENCH_ADMIN_TOKEN: &str = "bench-admin-token-of-at-least-32-characters";

#[tokio::main]
async fn main() {
    if std::env::var_os("RUST_LOG").is_some() {
        server::telemetry::init(server::telemetry::LogFormat::Text);
    }
    let host = serve(
        axum::Router::new()
            .route("/tools", get(|| async { Json(json!({"tools": [{"name": "lookup", "verb": "get",
                "description": "Look up", "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}}}]})) }))
            .route("/context", get(|| async { Json(json!({"page": "bench"})) }))
            .route("/tools/execute", post(|| async {
                Json(json!({"output": {"status": "ok", "display": [{"title": "A result", "url": "https://example.com/a"}]}}))
            })),
    )
    .await;
    let model = serve(axum::Router::new().route("/v1/chat/completions", post(fake_model))).await;

    let data = tempfile::tempdir().unwrap();
    // BENCH_DATABASE_URL (an empty PostgreSQL database) instead of a fresh SQLite file.
    let database = std::env::var("BENCH_DATABASE_URL")
        .unwrap_or_else(|_| format!("sqlite://{}?mode=rwc", data.path().join("bench.db").display()));
    println!("database: {}", database.split(':').next().unwrap_or_default());
    let vars = [
        ("DATABASE_URL", database),
        ("LEPTOS_SITE_ADDR", "127.0.0.1:0".to_string()),
        ("CA_DATA_DIR", data.path().display().to_string()),
        ("CA_ADMIN_TOKEN", BENCH_ADMIN_TOKEN.into()),
        ("CA_ALLOW_PRIVATE_TOOL_HOSTS", "1".into()),
        ("OPENAI_BASE_URL", format!("http://{model}/v1")),
        ("CA_MAX_ITERATIONS", (TOOL_STEPS + 1).to_string()),
        // The limits count (each turn is checked) but never refuse here.
        ("CA_TURNS_PER_USER_PER_MINUTE", "1000000000".into()),
        ("CA_TURNS_PER_IP_PER_MINUTE", "1000000000".into()),
        ("CA_TURNS_PER_WORKSPACE_PER_MINUTE", "1000000000".into()),
        ("CA_WORKSPACE_DAILY_TOKENS", "1000000000000".into()),
        ("CA_MAX_CONCURRENT_TURNS", "100000".into()),
    ];
    let config = server::config::Config::from_lookup(|n| vars.iter().find(|(k, _)| *k == n).map(|(_, v)| v.clone()))
        .expect("valid configuration");
    let app = server::app::Application::build(config).await.expect("the server starts");
    let base = format!("http://{}", app.address());
    tokio::spawn(app.run_until_stopped());

    let client = reqwest::Client::builder().pool_max_idle_per_host(200).build().unwrap();
    let created: Value = client
        .post(format!("{base}/v1/workspaces"))
        .bearer_auth(BENCH_ADMIN_TOKEN)
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
        .json(&json!({"base_url": format!("http://{host}"), "secret": "s"}))
        .send()
        .await
        .unwrap()
        .error_for_status()
        .unwrap();
    let workspace = created["id"].as_str().unwrap().to_owned();
    let secret = created["embed_secret"].as_str().unwrap().to_owned();

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

fn percentile(samples: &mut [Duration], p: f64) -> Duration {
    samples.sort();
    samples.get(((samples.len() as f64 * p) as usize).min(samples.len().saturating_sub(1))).copied().unwrap_or_default()
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

/// Calls `lookup` until it has seen `TOOL_STEPS` results since the user
/// spoke, then answers in text. Stateless, so any number of turns can run.
async fn fake_model(Json(body): Json<Value>) -> impl IntoResponse {
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
    if since_user < TOOL_STEPS {
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

async fn serve(router: axum::Router) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    address
}
