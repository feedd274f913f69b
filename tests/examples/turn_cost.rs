//! Cost per turn: the server binary as a process of its own, with every
//! limit counting and every stream event stored, runs turns against fakes
//! that answer at once (two model steps and one `get` call per turn). It
//! reports the server's CPU time per turn (from `/proc`: user + system,
//! every thread, background work included), and with `callgrind` the
//! instructions it executes per turn under `valgrind --tool=callgrind`,
//! which do not move with machine noise.
//!
//! Run: `scripts/bench-cost.sh` (`BENCH_CALLGRIND=1` adds the instruction
//! count; `BENCH_DATABASE=postgres` runs on a fresh PostgreSQL database).
//! `turn_cost --peer scripts/peer/server.mjs` measures the same turns,
//! against the same fakes, served by the Vercel AI SDK in Node
//! (`scripts/bench-peer.sh` runs both, alternated).
//! Each turn begins a conversation of its own unless
//! `BENCH_TURNS_PER_CONVERSATION=N` (a conversation's first turn, then
//! N − 1 later turns in it, each sent once the one before has ended).

#[path = "common/mod.rs"]
mod common;

use std::future::Future;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{cpu_ms, user_system_ms};
use serde_json::json;

/// One `get` call, then the answer: two model steps.
const TOOL_STEPS: usize = 1;

#[tokio::main]
async fn main() {
    let mut args = std::env::args().skip(1);
    let binary = args.next().expect("usage: turn_cost <server binary> [cpu|callgrind] | turn_cost --peer <server.mjs>");
    if binary == "--peer" {
        let script = args.next().expect("usage: turn_cost --peer <scripts/peer/server.mjs>");
        return peer(&script).await;
    }
    let mode = args.next().unwrap_or_else(|| "cpu".into());
    let host = common::lookup_host().await;
    let model = common::lookup_model(TOOL_STEPS).await;
    let data = tempfile::tempdir().unwrap();
    let port = common::free_port();
    let mut vars: Vec<(&str, String)> = common::LIMITS_THAT_COUNT.iter().map(|(k, v)| (*k, v.to_string())).collect();
    vars.push(("CA_DATA_DIR", data.path().display().to_string()));
    if let Ok(url) = std::env::var("BENCH_DATABASE_URL") {
        vars.push(("DATABASE_URL", url));
    }
    let (wrapper, ready_within) = match mode.as_str() {
        "cpu" => (Vec::new(), Duration::from_secs(30)),
        "callgrind" => (
            vec![
                "valgrind".to_string(),
                "--tool=callgrind".into(),
                format!("--callgrind-out-file={}/callgrind.out.%p", data.path().display()),
            ],
            Duration::from_secs(300),
        ),
        other => panic!("unknown mode {other}: cpu or callgrind"),
    };
    let mut server = common::start_server(&binary, &wrapper, port, model, &vars);
    let base = format!("http://127.0.0.1:{port}");
    let client = reqwest::Client::builder().pool_max_idle_per_host(200).build().unwrap();
    common::wait_ready(&client, &base, ready_within).await;
    let (workspace, secret) = common::connected_workspace(&client, &base, host).await;
    let pid = server.id();
    let per_conversation: usize =
        std::env::var("BENCH_TURNS_PER_CONVERSATION").map_or(1, |n| n.parse().expect("a number of turns"));
    assert!(per_conversation >= 1, "BENCH_TURNS_PER_CONVERSATION is at least 1");
    println!(
        "server: {binary}; database: {}; turns per conversation: {per_conversation}",
        std::env::var("BENCH_DATABASE_URL").map_or("sqlite", |_| "postgres")
    );
    let target = Target::Ours { workspace: &workspace, secret: &secret };
    let run = |concurrency, turns| run(&client, &base, &target, concurrency, turns, per_conversation);

    // Warm up connections, caches and the database.
    run(4, 40).await;

    match mode.as_str() {
        "cpu" => {
            cpu_table(pid, run).await;
            common::stop(&mut server);
        }
        _ => {
            let turns = 200;
            callgrind_control(&["--zero", &pid.to_string()]);
            run(1, turns).await;
            callgrind_control(&["--dump", &pid.to_string()]);
            let instructions = dumped_instructions(data.path(), pid);
            println!(
                "{turns} turns, one at a time: {instructions} instructions, {:.0} per turn",
                instructions as f64 / turns as f64
            );
            if let Ok(keep) = std::env::var("BENCH_CALLGRIND_KEEP") {
                for entry in std::fs::read_dir(data.path()).unwrap().flatten() {
                    if entry.file_name().to_string_lossy().starts_with("callgrind.out") {
                        std::fs::copy(entry.path(), Path::new(&keep).join(entry.file_name())).unwrap();
                    }
                }
                println!("profiles copied to {keep} (callgrind_annotate --inclusive=yes <file>)");
            }
            common::terminate(&mut server);
        }
    }
}

/// The same turns served by the Vercel AI SDK (`scripts/peer/server.mjs`
/// in Node), against the same model and tool host fakes: the peer's CPU
/// per turn, in the same table as ours.
async fn peer(script: &str) {
    let host = common::lookup_host().await;
    let model = common::lookup_model(TOOL_STEPS).await;
    let port = common::free_port();
    // Its errors go to ours; the guard stops it if a check here fails.
    let server = KillOnDrop(
        Command::new("node")
            .arg(script)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("NODE_ENV", "production")
            .env("PORT", port.to_string())
            .env("TOOL_HOST", format!("http://{host}"))
            .env("OPENAI_BASE_URL", format!("http://{model}/v1"))
            .env("OPENAI_API_KEY", "bench")
            .stdout(Stdio::null())
            .spawn()
            .expect("node starts (is Node.js on PATH?)"),
    );
    let base = format!("http://127.0.0.1:{port}");
    let client = reqwest::Client::builder().pool_max_idle_per_host(200).build().unwrap();
    common::wait_ready(&client, &base, Duration::from_secs(30)).await;
    let node =
        Command::new("node").arg("--version").output().map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned());
    println!("peer: {script} (Vercel AI SDK) on Node {}", node.unwrap_or_default());
    let run = |concurrency, turns| run(&client, &base, &Target::Peer, concurrency, turns, 1);
    // V8 compiles a function once it has run hot, and its first turns
    // are slower: the peer warms up longer than ours (200 turns, not 40).
    run(4, 200).await;
    cpu_table(server.0.id(), run).await;
}

/// A child process stopped when this goes out of scope, a panic included.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        common::stop(&mut self.0);
    }
}

/// Runs 1,000 turns one at a time, then 3,000 ten at a time, and prints
/// the server's CPU per turn for each, then its CPU while idle.
async fn cpu_table<F, R>(pid: u32, run: F)
where
    F: Fn(usize, usize) -> R,
    R: Future<Output = ()>,
{
    println!("| concurrent conversations | turns | turns/s | server CPU per turn | of which user / system |");
    println!("|---|---|---|---|---|");
    for (concurrency, turns) in [(1, 1000), (10, 3000)] {
        let (user, system) = user_system_ms(pid);
        let started = Instant::now();
        run(concurrency, turns).await;
        let elapsed = started.elapsed();
        let (user_after, system_after) = user_system_ms(pid);
        let per_turn = |ms: f64| ms / turns as f64;
        println!(
            "| {concurrency} | {turns} | {:.0} | {:.2} ms | {:.2} / {:.2} ms |",
            turns as f64 / elapsed.as_secs_f64(),
            per_turn(user_after - user + system_after - system),
            per_turn(user_after - user),
            per_turn(system_after - system),
        );
    }
    let before = cpu_ms(pid);
    tokio::time::sleep(Duration::from_secs(5)).await;
    println!("idle: {:.1} ms of CPU per second", (cpu_ms(pid) - before) / 5.0);
}

fn callgrind_control(args: &[&str]) {
    let status = Command::new("callgrind_control").args(args).stdout(std::process::Stdio::null()).status();
    assert!(status.is_ok_and(|s| s.success()), "callgrind_control {args:?} failed");
}

/// The instruction total of the dump `callgrind_control --dump` wrote.
fn dumped_instructions(dir: &Path, pid: u32) -> u64 {
    let prefix = format!("callgrind.out.{pid}.");
    let dump = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .find(|e| e.file_name().to_string_lossy().starts_with(&prefix))
        .expect("callgrind wrote a dump");
    let text = std::fs::read_to_string(dump.path()).unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix("summary:").or_else(|| l.strip_prefix("totals:")))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .expect("the dump has a summary")
}

/// Who serves the turns.
enum Target<'a> {
    /// Our server, in a workspace connected to the tool host.
    Ours { workspace: &'a str, secret: &'a str },
    /// `scripts/peer/server.mjs`: UI messages in, the Vercel AI SDK's UI
    /// message stream out.
    Peer,
}

/// Runs `turns` turns, `concurrency` conversations at a time, each of
/// its own user in English (the widget names the visitor's language with
/// every turn), `per_conversation` turns to a conversation; checks that
/// every one completed, its tool called.
async fn run(
    client: &reqwest::Client,
    base: &str,
    target: &Target<'_>,
    concurrency: usize,
    turns: usize,
    per_conversation: usize,
) {
    let per_worker = turns / concurrency;
    let workers = (0..concurrency).map(|w| {
        let client = client.clone();
        let (url, token) = match target {
            Target::Ours { workspace, secret } => (
                format!("{base}/v1/chat/turns"),
                Some(server::auth::mint(workspace, secret, &format!("cost_{w}"), &[], 3600)),
            ),
            Target::Peer => (format!("{base}/turn"), None),
        };
        async move {
            let mut conversation: Option<String> = None;
            for turn in 0..per_worker {
                let mut request = match target {
                    Target::Ours { .. } => json!({"message": "look it up", "lang": "en"}),
                    Target::Peer => json!({"messages": [{"id": format!("m{w}_{turn}"), "role": "user",
                        "parts": [{"type": "text", "text": "look it up"}]}]}),
                };
                if turn % per_conversation != 0 {
                    request["conversation_id"] = json!(conversation.as_deref().expect("the first turn named it"));
                }
                let mut send = client.post(&url).json(&request);
                if let Some(token) = &token {
                    send = send.bearer_auth(token);
                }
                let body = send.send().await.unwrap().text().await.unwrap();
                match target {
                    Target::Ours { .. } => assert!(
                        body.contains("event: display") && body.contains(r#""stop_reason":"completed""#),
                        "{body}"
                    ),
                    Target::Peer => assert!(
                        body.contains(r#""type":"tool-output-available""#) && body.contains(r#""finishReason":"stop""#),
                        "{body}"
                    ),
                }
                if turn % per_conversation == 0 && per_conversation > 1 {
                    conversation = Some(conversation_of(&body));
                }
            }
        }
    });
    futures::future::join_all(workers).await;
}

/// The conversation a turn's stream names in its `turn` event.
fn conversation_of(stream: &str) -> String {
    let data = stream
        .lines()
        .skip_while(|line| *line != "event: turn")
        .find_map(|line| line.strip_prefix("data: "))
        .expect("the stream has a turn event");
    let event: serde_json::Value = serde_json::from_str(data).expect("the turn event is JSON");
    event["conversation_id"].as_str().expect("the turn event names its conversation").to_owned()
}
