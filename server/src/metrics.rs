//! Prometheus metrics, recorded through the `metrics` crate into one
//! process-wide registry and rendered by its Prometheus exporter. Each
//! function here records one thing the operator watches; the names and
//! labels are the documented ones (docs/operations.md, "Metrics"). Labels
//! are closed vocabularies — never a user id, a tool's name or any text —
//! except the workspace of the token counters.

use std::sync::OnceLock;
use std::time::Duration;

use metrics::{counter, gauge, histogram};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use widget::wire::{ActionStatus, StopReason, Verb};

/// Seconds, from a fast tool host's reply to a slow model's whole step.
const LATENCY_BUCKETS: &[f64] = &[0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0];

/// Writes in one SQLite commit: one alone, up to `db::pool`'s 32 together.
const WRITES_BUCKETS: &[f64] = &[1.0, 2.0, 4.0, 8.0, 16.0, 32.0];

/// How often histogram samples are folded in when nobody scrapes.
const UPKEEP_EVERY: Duration = Duration::from_secs(5);

/// The process's registry, installed on first use (tests share it).
pub fn handle() -> &'static PrometheusHandle {
    static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();
    HANDLE.get_or_init(|| {
        let builder = PrometheusBuilder::new()
            .set_buckets_for_metric(Matcher::Suffix("_seconds".into()), LATENCY_BUCKETS)
            .expect("latency buckets are not empty")
            .set_buckets_for_metric(Matcher::Full("ca_sqlite_writes_per_commit".into()), WRITES_BUCKETS)
            .expect("writes buckets are not empty");
        let recorder = builder.build_recorder();
        let handle = recorder.handle();
        if metrics::set_global_recorder(recorder).is_err() {
            tracing::warn!("another metrics recorder is installed; /metrics stays empty");
        }
        describe();
        let upkeep = handle.clone();
        std::thread::Builder::new()
            .name("metrics-upkeep".into())
            .spawn(move || {
                loop {
                    std::thread::sleep(UPKEEP_EVERY);
                    upkeep.run_upkeep();
                }
            })
            .expect("the metrics upkeep thread starts");
        handle
    })
}

/// The scrape: every metric in Prometheus' text format, after the gauges
/// read from the database were `set`.
pub fn render() -> String {
    handle().render()
}

fn describe() {
    use metrics::{describe_counter, describe_gauge, describe_histogram};
    describe_counter!("ca_turns_total", "Turns finished, by stop reason.");
    describe_histogram!(
        "ca_model_step_duration_seconds",
        metrics::Unit::Seconds,
        "One model step, request to last chunk, by outcome."
    );
    describe_histogram!(
        "ca_model_time_to_first_token_seconds",
        metrics::Unit::Seconds,
        "From a model request to its first text or tool-call delta."
    );
    describe_counter!("ca_model_tokens_total", "Model tokens per workspace, direction input or output.");
    describe_counter!("ca_tool_calls_total", "Tool calls by verb and outcome.");
    describe_histogram!(
        "ca_host_request_duration_seconds",
        metrics::Unit::Seconds,
        "Calls to a host's tool server by endpoint and outcome."
    );
    describe_gauge!("ca_pending_actions", "Actions waiting for the user or the host, by state (database-wide).");
    describe_gauge!("ca_open_streams", "Turn event streams open in this process, turns' own and resumed.");
    describe_gauge!("ca_mcp_connections", "MCP server connections open in this process.");
    describe_counter!(
        "ca_mcp_connections_closed_total",
        "MCP server connections closed, by reason: idle, replaced (connected anew), removed, lost (by the server)."
    );
    describe_counter!("ca_limit_refusals_total", "Turns cut short or calls refused by a limit, by limit.");
    describe_histogram!(
        "ca_sqlite_writes_per_commit",
        "SQLite: the writes one commit took (several when turns write at the same time)."
    );
    describe_gauge!("ca_caddie_reports_queued", "Caddie status reports waiting for the hub (database-wide).");
    describe_counter!(
        "ca_caddie_reports_total",
        "Caddie status reports by outcome: pushed, queued, retried, failed, superseded, dropped."
    );
}

/// A turn ended with `reason` (the limit that cut it short, if one did,
/// is counted as a refusal by the caller: [`limit_of`]).
pub fn turn_finished(reason: StopReason) {
    counter!("ca_turns_total", "stop_reason" => reason.as_str()).increment(1);
}

/// The limit that cut a turn short with `reason`, if one did.
pub fn limit_of(reason: StopReason) -> Option<&'static str> {
    match reason {
        StopReason::IterationLimit => Some("turn_iterations"),
        StopReason::TimeLimit => Some("turn_time"),
        StopReason::TokenLimit => Some("turn_tokens"),
        _ => None,
    }
}

/// A model step took `duration` (`ok` when it answered in full), its
/// first delta arriving after `first_token`.
pub fn model_step(duration: Duration, first_token: Option<Duration>, ok: bool) {
    let outcome = if ok { "ok" } else { "error" };
    histogram!("ca_model_step_duration_seconds", "outcome" => outcome).record(duration.as_secs_f64());
    if let Some(first) = first_token {
        histogram!("ca_model_time_to_first_token_seconds").record(first.as_secs_f64());
    }
}

/// Tokens a workspace's step sent (`input`) and received (`output`).
pub fn tokens(workspace_id: &str, input: u64, output: u64) {
    counter!("ca_model_tokens_total", "workspace_id" => workspace_id.to_owned(), "direction" => "input")
        .increment(input);
    counter!("ca_model_tokens_total", "workspace_id" => workspace_id.to_owned(), "direction" => "output")
        .increment(output);
}

/// How a tool call ended: `ok`/`error` for a run (a `get`, or an applied
/// change), `previewed`/`preview_failed` for a proposed change, `refused`
/// when the engine answered it without the host (an unknown tool has the
/// verb `unknown`).
pub fn tool_call(verb: Option<Verb>, outcome: &'static str) {
    let verb = verb.map_or("unknown", Verb::as_str);
    counter!("ca_tool_calls_total", "verb" => verb, "outcome" => outcome).increment(1);
}

/// A request to a host's tool server (`endpoint`: `tools`, `context`,
/// `tools/preview`, `tools/execute`).
pub fn host_request(endpoint: &'static str, duration: Duration, ok: bool) {
    let outcome = if ok { "ok" } else { "error" };
    histogram!("ca_host_request_duration_seconds", "endpoint" => endpoint, "outcome" => outcome)
        .record(duration.as_secs_f64());
}

/// A limit refused a request or cut a turn short.
/// An MCP server connection opened.
pub fn mcp_connection_opened() {
    gauge!("ca_mcp_connections").increment(1.0);
}

/// An MCP server connection closed, and why.
pub fn mcp_connection_closed(reason: &'static str) {
    gauge!("ca_mcp_connections").decrement(1.0);
    counter!("ca_mcp_connections_closed_total", "reason" => reason).increment(1);
}

/// SQLite committed `writes` writes together.
pub fn sqlite_commit(writes: usize) {
    histogram!("ca_sqlite_writes_per_commit").record(writes as f64);
}

pub fn limit_refused(limit: &'static str) {
    counter!("ca_limit_refusals_total", "limit" => limit).increment(1);
}

/// Sets the actions in an open or executing `status` (read from the database).
pub fn pending_actions(status: ActionStatus, count: i64) {
    gauge!("ca_pending_actions", "state" => status.as_str()).set(count as f64);
}

/// Sets the number of queued Caddie status reports (read from the database).
pub fn caddie_reports_queued(count: i64) {
    gauge!("ca_caddie_reports_queued").set(count as f64);
}

/// A Caddie status report was `pushed`, `queued` (its first push failed),
/// `retried` (delivered from the queue), `failed` (a retry failed),
/// `superseded` (a newer state replaced it in the queue) or `dropped`
/// (the hub refused it for good).
pub fn caddie_report(outcome: &'static str) {
    counter!("ca_caddie_reports_total", "outcome" => outcome).increment(1);
}

/// An open turn stream; the gauge falls when it is dropped.
pub struct OpenStream(());

impl OpenStream {
    pub fn open() -> Self {
        gauge!("ca_open_streams").increment(1.0);
        Self(())
    }
}

impl Drop for OpenStream {
    fn drop(&mut self) {
        gauge!("ca_open_streams").decrement(1.0);
    }
}
