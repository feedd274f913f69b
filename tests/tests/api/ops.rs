//! What operators watch: `/metrics` in Prometheus' text format, guarded
//! by a token on the main listener or served on its own address.

use serde_json::json;

use crate::helpers::{ADMIN_TOKEN, Db, HostSpec, Rig, Step, of, pending, spawn_app, task_tools};

const METRICS_TOKEN: &str = "metrics-token-of-at-least-32-characters";

/// Scrapes run one at a time: the registry is the process's, and each
/// test app's scrape sets the database-wide gauges from its own database
/// before it renders them (another's in between would show its values).
static GAUGES: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// One sample: its name, its labels and its value.
struct Sample {
    name: String,
    labels: Vec<(String, String)>,
    value: f64,
}

fn samples(text: &str) -> Vec<Sample> {
    text.lines()
        .filter(|line| !line.starts_with('#') && !line.trim().is_empty())
        .map(|line| {
            let (series, value) = line.rsplit_once(' ').expect("a sample has a value");
            let (name, labels) = match series.split_once('{') {
                Some((name, rest)) => (name, rest.trim_end_matches('}')),
                None => (series, ""),
            };
            let labels = labels
                .split(',')
                .filter(|pair| !pair.is_empty())
                .map(|pair| {
                    let (k, v) = pair.split_once('=').expect("label=value");
                    (k.to_owned(), v.trim_matches('"').to_owned())
                })
                .collect();
            Sample { name: name.to_owned(), labels, value: value.parse().expect("a number") }
        })
        .collect()
}

/// The value of `name` with (at least) these labels; 0 when absent.
fn value(samples: &[Sample], name: &str, labels: &[(&str, &str)]) -> f64 {
    samples
        .iter()
        .filter(|s| s.name == name && labels.iter().all(|(k, v)| s.labels.iter().any(|(lk, lv)| lk == k && lv == v)))
        .map(|s| s.value)
        .sum()
}

async fn scrape(base: &str, token: Option<&str>) -> (u16, String) {
    let _one_at_a_time = GAUGES.lock().await;
    let mut request = crate::helpers::http().get(format!("{base}/metrics"));
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request.send().await.unwrap();
    (response.status().as_u16(), response.text().await.unwrap())
}

#[tokio::test]
async fn a_turn_shows_in_the_metrics_by_stop_reason_tokens_tools_and_latency() {
    for db in [Db::Sqlite, Db::Postgres] {
        let script = vec![
            Step::Call("lookup", json!({"q": "milk"})),
            Step::Text("found it"),
            Step::Call("create_task", json!({"title": "Buy milk"})),
        ];
        let rig = Rig::start(db, HostSpec::new(task_tools()), script, &[("CA_METRICS_TOKEN", METRICS_TOKEN)]).await;
        let base = rig.app.url("");
        let (_, before) = scrape(&base, Some(METRICS_TOKEN)).await;
        let before = samples(&before);

        let answered = rig.say("find milk").await;
        assert_eq!(of(&answered, "done")[0]["stop_reason"], "completed");
        let proposed = rig.say("add it").await;
        assert_eq!(pending(&proposed)["status"], "pending");

        let (status, text) = scrape(&base, Some(METRICS_TOKEN)).await;
        assert_eq!(status, 200);
        let after = samples(&text);
        let grew = |name: &str, labels: &[(&str, &str)]| value(&after, name, labels) - value(&before, name, labels);

        assert!(grew("ca_turns_total", &[("stop_reason", "completed")]) >= 1.0, "{text}");
        assert!(grew("ca_turns_total", &[("stop_reason", "pending_action")]) >= 1.0, "{text}");
        // Three model steps of 50 tokens each (25 in, 25 out), this workspace's alone.
        let workspace = rig.workspace.as_str();
        let tokens = |direction| {
            value(&after, "ca_model_tokens_total", &[("workspace_id", workspace), ("direction", direction)])
        };
        assert_eq!((tokens("input"), tokens("output")), (75.0, 75.0), "{text}");
        assert!(grew("ca_tool_calls_total", &[("verb", "get"), ("outcome", "ok")]) >= 1.0, "{text}");
        assert!(grew("ca_tool_calls_total", &[("verb", "create"), ("outcome", "previewed")]) >= 1.0, "{text}");
        assert!(grew("ca_model_step_duration_seconds_count", &[("outcome", "ok")]) >= 3.0, "{text}");
        assert!(grew("ca_model_time_to_first_token_seconds_count", &[]) >= 3.0, "{text}");
        let host = [("endpoint", "tools/execute"), ("outcome", "ok")];
        assert!(grew("ca_host_request_duration_seconds_count", &host) >= 1.0, "{text}");
        assert!(value(&after, "ca_host_request_duration_seconds_bucket", &[("le", "+Inf")]) >= 1.0, "{text}");
        // Read from this app's database at the scrape: its one open action.
        assert_eq!(value(&after, "ca_pending_actions", &[("state", "pending")]), 1.0, "{text}");
        assert_eq!(value(&after, "ca_pending_actions", &[("state", "executing")]), 0.0, "{text}");
        assert_eq!(value(&after, "ca_caddie_reports_queued", &[]), 0.0, "{text}");
        for secret in [METRICS_TOKEN, ADMIN_TOKEN, rig.secret.as_str(), "milk"] {
            assert!(!text.contains(secret), "the metrics never carry a secret or message text");
        }
    }
}

#[tokio::test]
async fn a_cut_short_turn_counts_as_a_limit_refusal() {
    let rig = Rig::start(
        Db::Sqlite,
        HostSpec::new(task_tools()),
        vec![Step::Call("lookup", json!({}))],
        &[("CA_METRICS_TOKEN", METRICS_TOKEN), ("CA_MAX_ITERATIONS", "1")],
    )
    .await;
    let base = rig.app.url("");
    let refusals = |text: &str| value(&samples(text), "ca_limit_refusals_total", &[("limit", "turn_iterations")]);
    let before = refusals(&scrape(&base, Some(METRICS_TOKEN)).await.1);
    let events = rig.say("look forever").await;
    assert_eq!(of(&events, "done")[0]["stop_reason"], "iteration_limit");
    let after = refusals(&scrape(&base, Some(METRICS_TOKEN)).await.1);
    assert!(after >= before + 1.0, "{before} → {after}");
}

#[tokio::test]
async fn metrics_ask_for_their_token_and_are_absent_without_one() {
    let app = spawn_app(Db::Sqlite).env("CA_METRICS_TOKEN", METRICS_TOKEN).start().await;
    let base = app.url("");
    assert_eq!(scrape(&base, None).await.0, 401);
    assert_eq!(scrape(&base, Some(ADMIN_TOKEN)).await.0, 401);
    assert_eq!(scrape(&base, Some(&METRICS_TOKEN[..31])).await.0, 401);
    let (status, text) = scrape(&base, Some(METRICS_TOKEN)).await;
    assert_eq!(status, 200);
    assert!(text.contains("# TYPE ca_pending_actions gauge"), "{text}");

    let open = spawn_app(Db::Sqlite).start().await;
    assert_eq!(scrape(&open.url(""), None).await.0, 404, "no token: no /metrics on the public listener");
}

#[tokio::test]
async fn a_separate_metrics_address_serves_only_metrics() {
    let app = spawn_app(Db::Sqlite).env("CA_METRICS_ADDR", "127.0.0.1:0").start().await;
    let metrics = format!("http://{}", app.metrics_address.expect("a metrics listener"));

    let (status, text) = scrape(&metrics, None).await;
    assert_eq!(status, 200);
    assert!(text.contains("ca_caddie_reports_queued"), "{text}");
    assert_eq!(scrape(&app.url(""), None).await.0, 404, "not on the public listener");
    let health = reqwest::get(format!("{metrics}/health")).await.unwrap();
    assert_eq!(health.status(), 404, "the metrics address serves /metrics only");

    app.shut_down().await;
    assert!(reqwest::get(format!("{metrics}/metrics")).await.is_err(), "it closes with the server");
}
