//! The connect report for an MCP server (`POST /v1/integrations/mcp/connect`
//! and `…/mcp/check`): the handshake, the tools as a model will see them
//! (names, descriptions, schemas, count), how they were classified, whether
//! the server announces changes, and the timing of its reads — each `get`
//! tool called once with arguments made from its schema (never a tool that
//! needs Apply), as the Remote Tools checker does; four at a time, each
//! waited for at most half the tool timeout (past that it is slow).

use std::time::{Duration, Instant};

use serde_json::Value;
use widget::wire::Verb;

use super::client::{McpError, Server};
use crate::checker::{Report, Status, definition_rules, sample, verdict};
use crate::host::ToolSpec;

/// At most this many `get` tools are called,
const MAX_CALLED: usize = 12;
/// and at most this many at once.
const READS_AT_ONCE: usize = 4;
/// Who the report's calls act for: a server can tell them from a user's.
pub const CHECK_USER: &str = "context-assistant-check";

/// What was seen while connecting.
pub struct Seen<'a> {
    pub server: &'a Server,
    pub handshake: Duration,
    pub listing: Duration,
    /// The tools as listed, within the allowlist.
    pub listed: &'a [Value],
    /// The same, classified.
    pub tools: &'a [ToolSpec],
    pub trust_annotations: bool,
    /// The time a call may take.
    pub timeout: Duration,
    /// The `_meta` the calls carry (the check's own scope).
    pub meta: serde_json::Map<String, Value>,
}

/// Every rule, in order.
pub async fn report(seen: Seen<'_>) -> Report {
    let mut report = Report::default();
    let (name, version) = seen.server.server_info().unwrap_or_else(|| ("(unnamed)".into(), "?".into()));
    report.add(
        "mcp.handshake",
        Status::Pass,
        format!("protocol 2025-11-25 with {name} {version} in {} ms", seen.handshake.as_millis()),
    );
    let listing = format!("{} tools in {} ms", seen.listed.len(), seen.listing.as_millis());
    report.add("mcp.tools_list", slow(seen.listing, seen.timeout), listing);
    names(&mut report, seen.tools);
    definition_rules(&mut report, seen.listed);
    classification(&mut report, &seen);
    if seen.server.announces_tool_changes() {
        report.add("mcp.list_changed", Status::Pass, "the server announces changes to its tools");
    } else {
        report.add(
            "mcp.list_changed",
            Status::Warn,
            "the server does not announce changes to its tools (listChanged): the assistant keeps the list it \
             read until the server is connected again",
        );
    }
    reads(&mut report, &seen).await;
    report
}

/// One `get` tool called with arguments made from its schema, waited for
/// at most `patience`: the tool, how long it took, its answer (`Err` when
/// it had not answered by then).
async fn read<'a>(
    seen: &Seen<'_>,
    tool: &'a ToolSpec,
    patience: Duration,
) -> (&'a ToolSpec, Duration, Result<Result<Value, McpError>, tokio::time::error::Elapsed>) {
    let arguments = sample(&tool.input_schema.value()).as_object().cloned().unwrap_or_default();
    let started = Instant::now();
    let answer =
        tokio::time::timeout(patience, seen.server.call(&tool.origin.name, arguments, seen.meta.clone())).await;
    (tool, started.elapsed(), answer)
}

fn slow(took: Duration, timeout: Duration) -> Status {
    if took > timeout / 2 { Status::Warn } else { Status::Pass }
}

/// A name the model cannot take as it is is sent under a mapped one.
fn names(report: &mut Report, tools: &[ToolSpec]) {
    let mapped: Vec<String> = tools
        .iter()
        .filter(|t| !crate::host::valid_tool_name(&t.name))
        .map(|t| format!("`{}` is shown to the model under a name of A-Z a-z 0-9 _ - (64 at most)", t.name))
        .collect();
    verdict(report, "tools.names", &mapped, Status::Warn, "every name one a model accepts as it is");
}

fn classification(report: &mut Report, seen: &Seen<'_>) {
    let count = |verbs: &[Verb]| seen.tools.iter().filter(|t| verbs.contains(&t.verb)).count();
    let detail = format!(
        "{} run by themselves (get), {} wait for Apply (create, update), {} need two confirmations (delete)",
        count(&[Verb::Get]),
        count(&[Verb::Create, Verb::Update]),
        count(&[Verb::Delete])
    );
    let says_read_only = seen
        .listed
        .iter()
        .filter(|t| t.pointer("/annotations/readOnlyHint").and_then(Value::as_bool) == Some(true))
        .count();
    if !seen.trust_annotations && says_read_only > 0 && count(&[Verb::Get]) == 0 {
        report.add(
            "tools.classification",
            Status::Warn,
            format!(
                "{detail}: {says_read_only} say they only read; set trust_annotations if you trust this server, \
                 or name them in verbs, to let them run without Apply"
            ),
        );
    } else {
        report.add("tools.classification", Status::Pass, detail);
    }
}

async fn reads(report: &mut Report, seen: &Seen<'_>) {
    let gets: Vec<&ToolSpec> = seen.tools.iter().filter(|t| t.verb == Verb::Get).take(MAX_CALLED).collect();
    if gets.is_empty() {
        report.add("reads.time", Status::Pass, "no tool runs by itself, so none was called");
        return;
    }
    // A read past half the timeout is already slow (a warning): the report
    // stops waiting for it there (the server is told), and reads run a few
    // at a time, so a connect waits for its slowest read, not their sum.
    let patience = seen.timeout / 2;
    let mut answers = Vec::with_capacity(gets.len());
    for some in gets.chunks(READS_AT_ONCE) {
        answers.extend(futures::future::join_all(some.iter().map(|tool| read(seen, tool, patience))).await);
    }
    let mut slowest = Duration::ZERO;
    let mut problems = Vec::new();
    let mut unfinished = Vec::new();
    for (tool, took, answer) in answers {
        slowest = slowest.max(took);
        let Ok(answer) = answer else {
            unfinished.push(format!("`{}`", tool.origin.name));
            continue;
        };
        match answer.map(|result| super::content::outcome(&result)) {
            Ok(super::content::Outcome::Output(_)) => {}
            Ok(super::content::Outcome::Failed(said)) => problems.push(format!(
                "`{}` answered isError with arguments made from its schema: {}",
                tool.origin.name,
                said.chars().take(200).collect::<String>()
            )),
            Err(error) => problems.push(format!("`{}` failed: {error}", tool.origin.name)),
        }
    }
    verdict(report, "reads.calls", &problems, Status::Warn, "every tool that runs by itself answered");
    let timeout = seen.timeout.as_millis();
    if !unfinished.is_empty() {
        let detail = format!(
            "{} had not answered after {} ms, half the timeout ({timeout} ms): a turn waits that long or more",
            unfinished.join(", "),
            patience.as_millis()
        );
        report.add("reads.time", Status::Warn, detail);
        return;
    }
    let detail = format!("the slowest read took {} ms (the timeout is {timeout} ms)", slowest.as_millis());
    report.add("reads.time", slow(slowest, seen.timeout), detail);
}
