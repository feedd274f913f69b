//! The host checker: runs the Remote Tools contract against a tool server
//! and reports, rule by rule, what its developer can act on, with the
//! evidence (`context-assistant check-host`, `POST
//! /v1/integrations/generic-rest/check`, and beside the tool list when a
//! tool server is connected). Only `get` tools are ever executed: a
//! create, update or delete is previewed, never run.

use std::fmt::Write as _;
use std::time::Duration;

use serde::Serialize;
use serde_json::{Value, json};

use crate::host::{ExecutionScope, HostClient, HostError, HostTarget, MAX_RESPONSE_BYTES, RawAnswer, valid_tool_name};
use crate::ids::new_id;

/// How a rule came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Pass,
    Warn,
    Fail,
}

/// One rule's result.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Rule {
    pub id: &'static str,
    pub status: Status,
    /// What was seen, and what to do about it.
    pub detail: String,
}

/// Every rule's result, in the order they ran.
#[derive(Debug, Clone, Default, Serialize, utoipa::ToSchema)]
pub struct Report {
    pub rules: Vec<Rule>,
}

impl Report {
    /// True when any rule failed.
    pub fn failed(&self) -> bool {
        self.rules.iter().any(|r| r.status == Status::Fail)
    }

    pub fn status_of(&self, id: &str) -> Option<Status> {
        self.rules.iter().find(|r| r.id == id).map(|r| r.status)
    }

    pub fn add(&mut self, id: &'static str, status: Status, detail: impl Into<String>) {
        self.rules.push(Rule { id, status, detail: detail.into() });
    }

    /// A line per rule, then the counts: what the command prints.
    pub fn text(&self) -> String {
        let mut out = String::new();
        for rule in &self.rules {
            let word = match rule.status {
                Status::Pass => "PASS",
                Status::Warn => "WARN",
                Status::Fail => "FAIL",
            };
            let _ = writeln!(out, "{word}  {:<22} {}", rule.id, rule.detail);
        }
        let count = |s| self.rules.iter().filter(|r| r.status == s).count();
        let _ = writeln!(
            out,
            "\n{} passed, {} warnings, {} failed",
            count(Status::Pass),
            count(Status::Warn),
            count(Status::Fail)
        );
        out
    }
}

/// At most this many tools are called (get) or previewed (the others).
const MAX_CALLED: usize = 12;
/// Who the checker's calls act for: a host can tell them from a user's.
pub const CHECK_USER: &str = "context-assistant-check";
/// The tool name the error rule previews: no host has it.
const NO_SUCH_TOOL: &str = "context_assistant_check_no_such_tool";
/// A context larger than this costs noticeably on every turn.
const LARGE_CONTEXT: usize = 32 * 1024;
/// Keywords providers refuse at the top of a tool's parameters.
const TOP_LEVEL_REFUSED: &[&str] = &["anyOf", "oneOf", "allOf", "enum", "not"];

/// Runs every rule against `target`.
pub async fn check(client: &HostClient, target: &HostTarget) -> Report {
    let mut report = Report::default();
    let scope = ExecutionScope {
        workspace_id: "ws_check".into(),
        external_user_id: CHECK_USER.into(),
        permissions: vec!["check:read".into()],
        request_id: new_id("req"),
    };
    let mut seen = Seen::default();
    transport(&mut report, target);
    let secret = target.secret.expose().to_owned();

    let wrong = client.raw(target, "tools", &scope, Some("context-assistant-check-wrong-secret"), None).await;
    auth(&mut report, "auth.wrong_secret", "a wrong secret", wrong.as_ref(), &mut seen);
    let none = client.raw(target, "tools", &scope, None, None).await;
    auth(&mut report, "auth.no_secret", "no secret", none.as_ref(), &mut seen);

    let tools = client.raw(target, "tools", &scope, Some(&secret), None).await;
    let tools = tools_answer(&mut report, tools, &mut seen);
    if let Some(tools) = &tools {
        tool_rules(&mut report, tools);
    }

    let context = client.raw(target, "context", &scope, Some(&secret), None).await;
    context_answer(&mut report, context, &mut seen);

    if let Some(tools) = &tools {
        let valid: Vec<&Value> =
            tools.iter().filter(|t| t.get("name").and_then(Value::as_str).is_some_and(valid_tool_name)).collect();
        let host = Host { client, target, scope: &scope };
        get_calls(&mut report, &host, &valid, &mut seen).await;
        previews(&mut report, &host, &valid, &mut seen).await;
    }
    let unknown = call_body(NO_SUCH_TOOL, &json!({}), &scope);
    let answer = client.raw(target, "tools/preview", &scope, Some(&secret), Some(&unknown)).await;
    error_shape(&mut report, answer, &mut seen);

    let timeout = client.timeout();
    if seen.largest > MAX_RESPONSE_BYTES / 2 {
        report.add(
            "answers.size",
            Status::Warn,
            format!("the largest answer was {} bytes; over {MAX_RESPONSE_BYTES} a call fails", seen.largest),
        );
    } else {
        report.add("answers.size", Status::Pass, format!("the largest answer was {} bytes", seen.largest));
    }
    let slowest =
        format!("the slowest call took {} ms (the timeout is {} ms)", seen.slowest.as_millis(), timeout.as_millis());
    report.add("answers.time", if seen.slowest > timeout / 2 { Status::Warn } else { Status::Pass }, slowest);
    match &seen.redirect {
        Some(to) => report.add(
            "transport.redirects",
            Status::Fail,
            format!("answered a redirect to {to}: redirects are not followed; register the final URL"),
        ),
        None => report.add("transport.redirects", Status::Pass, "no redirects"),
    }
    report
}

/// The tool server under check, and who the calls act for.
struct Host<'a> {
    client: &'a HostClient,
    target: &'a HostTarget,
    scope: &'a ExecutionScope,
}

/// What every call showed, for the rules on answers as a whole.
#[derive(Default)]
struct Seen {
    largest: usize,
    slowest: Duration,
    redirect: Option<String>,
}

impl Seen {
    fn note(&mut self, answer: &RawAnswer) {
        self.largest = self.largest.max(answer.body.len());
        self.slowest = self.slowest.max(answer.elapsed);
        if (300..400).contains(&answer.status) && self.redirect.is_none() {
            self.redirect = Some(answer.location.clone().unwrap_or_else(|| format!("(status {})", answer.status)));
        }
    }
}

fn transport(report: &mut Report, target: &HostTarget) {
    let url = &target.base_url;
    if url.scheme() == "https" {
        report.add("transport.tls", Status::Pass, "https");
        return;
    }
    let private = crate::host::private_literal(url).is_some() || url.host_str() == Some("localhost");
    if private {
        report.add(
            "transport.tls",
            Status::Warn,
            "plain http: acceptable on a private network only; use https in production",
        );
    } else {
        report.add(
            "transport.tls",
            Status::Fail,
            "plain http: the secret and every answer travel unencrypted; use https",
        );
    }
}

fn auth(report: &mut Report, id: &'static str, what: &str, answer: Result<&RawAnswer, &HostError>, seen: &mut Seen) {
    match answer {
        Ok(a) => {
            seen.note(a);
            match a.status {
                401 => report.add(id, Status::Pass, format!("GET /tools with {what}: 401")),
                200..=299 => report.add(
                    id,
                    Status::Fail,
                    format!("GET /tools with {what} answered {}: anyone can read your tools; answer 401", a.status),
                ),
                status => report.add(
                    id,
                    Status::Warn,
                    format!("GET /tools with {what} answered {status}; the contract asks for 401"),
                ),
            }
        }
        Err(error) => report.add(id, Status::Fail, format!("GET /tools with {what}: {error}")),
    }
}

fn tools_answer(report: &mut Report, answer: Result<RawAnswer, HostError>, seen: &mut Seen) -> Option<Vec<Value>> {
    let answer = match answer {
        Ok(answer) => answer,
        Err(error) => {
            report.add("tools.answer", Status::Fail, format!("GET /tools: {error}"));
            return None;
        }
    };
    seen.note(&answer);
    if !answer.ok() {
        report.add(
            "tools.answer",
            Status::Fail,
            format!("GET /tools answered {}: {}", answer.status, snippet(&answer)),
        );
        return None;
    }
    let Some(tools) = answer.json().and_then(|v| v.get("tools").and_then(Value::as_array).cloned()) else {
        report.add(
            "tools.answer",
            Status::Fail,
            format!("GET /tools is not {{\"tools\": [...]}}: {}", snippet(&answer)),
        );
        return None;
    };
    report.add(
        "tools.answer",
        Status::Pass,
        format!("{} tools in {} ms, with the scope in the query", tools.len(), answer.elapsed.as_millis()),
    );
    Some(tools)
}

fn tool_rules(report: &mut Report, tools: &[Value]) {
    let name = |t: &Value| t.get("name").and_then(Value::as_str).unwrap_or("").to_owned();
    let mut bad_names = Vec::new();
    let mut seen_names: Vec<String> = Vec::new();
    for tool in tools {
        let n = name(tool);
        if !valid_tool_name(&n) {
            bad_names.push(format!("`{}` (1 to 64 of A-Z a-z 0-9 _ -)", n.chars().take(80).collect::<String>()));
        } else if seen_names.contains(&n) {
            bad_names.push(format!("`{n}` (listed twice)"));
        }
        seen_names.push(n);
    }
    verdict(report, "tools.names", &bad_names, Status::Fail, "every name unique and one a model accepts");

    let bad_verbs: Vec<String> = tools
        .iter()
        .filter(|t| !matches!(t.get("verb").and_then(Value::as_str), Some("get" | "create" | "update" | "delete")))
        .map(|t| format!("`{}`: verb {}", name(t), t.get("verb").unwrap_or(&Value::Null)))
        .collect();
    verdict(report, "tools.verbs", &bad_verbs, Status::Fail, "every verb is get, create, update or delete");
    definition_rules(report, tools);
}

/// The rules every tool list meets, whatever its source: descriptions,
/// schemas a provider accepts, and a count a model takes.
pub fn definition_rules(report: &mut Report, tools: &[Value]) {
    let name = |t: &Value| t.get("name").and_then(Value::as_str).unwrap_or("").to_owned();

    let bad_descriptions: Vec<String> = tools
        .iter()
        .filter_map(|t| match t.get("description").and_then(Value::as_str).map(str::trim) {
            None | Some("") => Some(format!("`{}` has none: the model chooses tools by it", name(t))),
            Some(d) if d.chars().count() > 1024 => {
                Some(format!("`{}`: {} characters (keep it under 1024)", name(t), d.chars().count()))
            }
            Some(_) => None,
        })
        .collect();
    verdict(report, "tools.descriptions", &bad_descriptions, Status::Warn, "every tool described");

    let mut schema_fails = Vec::new();
    let mut schema_warns = Vec::new();
    for tool in tools {
        match tool.get("inputSchema") {
            None => schema_warns.push(format!("`{}` has no inputSchema (taken as no arguments)", name(tool))),
            Some(schema) => {
                if let Some(problem) = crate::schema::too_large(schema) {
                    schema_fails.push(format!("`{}`: {problem}: the tool is not offered", name(tool)));
                } else if let Some(problem) = schema_problem(schema) {
                    schema_fails.push(format!("`{}`: {problem}", name(tool)));
                } else if let Some(keyword) = TOP_LEVEL_REFUSED.iter().find(|k| schema.get(**k).is_some()) {
                    schema_warns
                        .push(format!("`{}`: `{keyword}` at the top level, which providers refuse", name(tool)));
                }
            }
        }
    }
    if !schema_fails.is_empty() {
        schema_fails.extend(schema_warns);
        report.add("tools.schemas", Status::Fail, schema_fails.join("; "));
    } else {
        verdict(
            report,
            "tools.schemas",
            &schema_warns,
            Status::Warn,
            "every inputSchema a JSON Schema object providers accept",
        );
    }

    let max = crate::llm::wire::MAX_TOOLS;
    if tools.len() > max {
        report.add(
            "tools.count",
            Status::Fail,
            format!("{} tools; models accept at most {max}: list the ones to offer in allowed_tools", tools.len()),
        );
    } else {
        report.add("tools.count", Status::Pass, format!("{} of at most {max}", tools.len()));
    }
}

/// Why `schema` is not a usable tool schema, if it is not.
fn schema_problem(schema: &Value) -> Option<String> {
    let Some(object) = schema.as_object() else { return Some("inputSchema is not a JSON object".into()) };
    if object.get("type").and_then(Value::as_str) != Some("object") {
        return Some("inputSchema must have \"type\": \"object\"".into());
    }
    if object.get("properties").is_some_and(|p| !p.is_object()) {
        return Some("`properties` must be an object".into());
    }
    // Our extension (docs/api-extensions.md): an attachment is passed as a
    // link, a string: only a string property, or an array of them, takes one.
    for (name, property) in object.get("properties").and_then(Value::as_object).into_iter().flatten() {
        let marked = |s: &Value| s.get("x-attachment").is_some_and(|m| m != &Value::Bool(false));
        let string = |s: &Value| s.get("type").and_then(Value::as_str) == Some("string");
        let fine = |s: &Value| !marked(s) || (string(s) && s.get("x-attachment") == Some(&Value::Bool(true)));
        let items = property.get("items");
        if !fine(property) || items.is_some_and(|i| !fine(i)) || (marked(property) && items.is_some()) {
            return Some(format!(
                "`{name}`: \"x-attachment\": true goes on a string property or on an array's string items"
            ));
        }
    }
    jsonschema::options()
        .with_pattern_options(jsonschema::PatternOptions::regex())
        .build(schema)
        .err()
        .map(|error| format!("not a valid JSON Schema: {error}"))
}

pub fn verdict(report: &mut Report, id: &'static str, problems: &[String], status: Status, fine: &str) {
    if problems.is_empty() {
        report.add(id, Status::Pass, fine);
    } else {
        report.add(id, status, problems.join("; "));
    }
}

fn context_answer(report: &mut Report, answer: Result<RawAnswer, HostError>, seen: &mut Seen) {
    let answer = match answer {
        Ok(answer) => answer,
        Err(error) => return report.add("context.answer", Status::Fail, format!("GET /context: {error}")),
    };
    seen.note(&answer);
    if !answer.ok() {
        return report.add(
            "context.answer",
            Status::Fail,
            format!("GET /context answered {}: {}", answer.status, snippet(&answer)),
        );
    }
    if !answer.json().is_some_and(|v| v.is_object()) {
        return report.add(
            "context.answer",
            Status::Fail,
            format!("GET /context is not a JSON object: {}", snippet(&answer)),
        );
    }
    let size = answer.body.len();
    let detail = format!("a JSON object of {size} bytes in {} ms", answer.elapsed.as_millis());
    if size > LARGE_CONTEXT {
        report.add(
            "context.answer",
            Status::Warn,
            format!("{detail}: it goes into every turn's prompt; keep it small"),
        );
    } else {
        report.add("context.answer", Status::Pass, detail);
    }
}

fn verb_of(tool: &Value) -> &str {
    tool.get("verb").and_then(Value::as_str).unwrap_or("")
}

fn name_of(tool: &Value) -> &str {
    tool.get("name").and_then(Value::as_str).unwrap_or("")
}

fn call_body(tool: &str, arguments: &Value, scope: &ExecutionScope) -> Value {
    json!({ "tool": tool, "callId": new_id("call"), "arguments": arguments, "execution": scope })
}

/// Each `get` tool executed once with arguments made from its schema, and
/// the display cards and components of what it answers.
async fn get_calls(report: &mut Report, host: &Host<'_>, tools: &[&Value], seen: &mut Seen) {
    let gets: Vec<&Value> = tools.iter().copied().filter(|t| verb_of(t) == "get").take(MAX_CALLED).collect();
    if gets.is_empty() {
        report.add("get.calls", Status::Pass, "no get tools to call");
        return;
    }
    let (mut dropped, mut cards) = (Vec::new(), 0);
    let rule = CallRule { id: "get.calls", path: "tools/execute" };
    call_each(report, host, &gets, rule, seen, |name, body, answer| {
        let output =
            body.get("output").ok_or_else(|| format!("`{name}`: 2xx without `output`: {}", snippet(answer)))?;
        cards += display_findings(name, output, &mut dropped);
        Ok(format!("`{name}` {} ms", answer.elapsed.as_millis()))
    })
    .await;
    if dropped.is_empty() {
        report.add("display.cards", Status::Pass, format!("{cards} display cards, all kept as sent"));
    } else {
        report.add("display.cards", Status::Warn, dropped.join("; "));
    }
}

/// What the sanitizer does to `output`'s cards and component: each
/// finding into `findings`; the number of entries seen.
fn display_findings(tool: &str, output: &Value, findings: &mut Vec<String>) -> usize {
    let mut entries_seen = 0;
    if let Some(entries) = output.get("display") {
        let Some(entries) = entries.as_array() else {
            findings.push(format!("`{tool}`: `display` is not an array: dropped"));
            return 0;
        };
        entries_seen = entries.len();
        if entries.len() > crate::display::MAX_PER_RESULT {
            findings.push(format!(
                "`{tool}`: {} entries; only the first {} of a result are kept",
                entries.len(),
                crate::display::MAX_PER_RESULT
            ));
        }
        for (i, entry) in entries.iter().enumerate().take(crate::display::MAX_PER_RESULT) {
            // The sanitizer on this entry alone: what the widget would show.
            let Some(card) = crate::display::cards_from_output(&json!({ "display": [entry] })).pop() else {
                findings.push(format!(
                    "`{tool}` display[{i}] dropped: needs a `title` and an absolute http(s) `url` without credentials"
                ));
                continue;
            };
            if entry.get("image").and_then(Value::as_str).is_some() && card.image.is_none() {
                findings.push(format!("`{tool}` display[{i}]: `image` cleared (only an absolute https link is kept)"));
            }
            let title = entry.get("title").and_then(Value::as_str).unwrap_or("");
            if title.trim() != card.title {
                findings.push(format!(
                    "`{tool}` display[{i}]: `title` shortened or cleaned to “{}”",
                    clip(&card.title, 40)
                ));
            }
        }
    }
    if output.get("component").is_some() && crate::component::from_output(output).is_none() {
        findings.push(format!(
            "`{tool}`: `component` dropped: `kind` must match ^[a-z][a-z0-9_]{{0,39}}$ and `data` be an object of at most {} bytes",
            crate::component::MAX_DATA_BYTES
        ));
    }
    entries_seen
}

/// Each create, update and delete tool previewed (never executed).
async fn previews(report: &mut Report, host: &Host<'_>, tools: &[&Value], seen: &mut Seen) {
    let changes: Vec<&Value> = tools.iter().copied().filter(|t| verb_of(t) != "get").take(MAX_CALLED).collect();
    if changes.is_empty() {
        report.add("preview.calls", Status::Pass, "no create, update or delete tools to preview");
        return;
    }
    let rule = CallRule { id: "preview.calls", path: "tools/preview" };
    call_each(report, host, &changes, rule, seen, |name, body, answer| {
        match body.get("preview").and_then(Value::as_str) {
            Some(text) if !text.trim().is_empty() => Ok(format!("`{name}`: “{}”", clip(text, 80))),
            _ => Err(format!("`{name}`: 2xx without a `preview` text: {}", snippet(answer))),
        }
    })
    .await;
}

/// Which rule a round of tool calls reports, and the endpoint it calls.
struct CallRule {
    id: &'static str,
    path: &'static str,
}

/// Calls `rule.path` once for each of `tools` with arguments made from its
/// schema and reports one rule: a 2xx body `accept` takes (else what it
/// says is wrong), a refusal in the contract's `{error}` shape (a right
/// answer: the made-up arguments may not fit the host's state) pass; a 4xx
/// without it warns; anything else fails.
async fn call_each(
    report: &mut Report,
    host: &Host<'_>,
    tools: &[&Value],
    rule: CallRule,
    seen: &mut Seen,
    mut accept: impl FnMut(&str, &Value, &RawAnswer) -> Result<String, String>,
) {
    // All at once: a slow tool costs the check one timeout, not one each.
    let calls = tools.iter().map(|tool| async move {
        let name = name_of(tool);
        let arguments = sample(tool.get("inputSchema").unwrap_or(&json!({"type": "object"})));
        let body = call_body(name, &arguments, host.scope);
        let secret = Some(host.target.secret.expose());
        (name, arguments, host.client.raw(host.target, rule.path, host.scope, secret, Some(&body)).await)
    });
    let (mut fails, mut warns, mut passes) = (Vec::new(), Vec::new(), Vec::new());
    for (name, arguments, answer) in futures::future::join_all(calls).await {
        let answer = match answer {
            Ok(answer) => answer,
            Err(error) => {
                fails.push(format!("`{name}`: {error}"));
                continue;
            }
        };
        seen.note(&answer);
        let json = answer.json();
        match (answer.status, json.as_ref()) {
            (200..=299, Some(body)) => match accept(name, body, &answer) {
                Ok(pass) => passes.push(pass),
                Err(fail) => fails.push(fail),
            },
            (400..=499, json) if has_error(json) => {
                passes.push(format!("`{name}` refused {arguments} with {} {}", answer.status, snippet(&answer)))
            }
            (400..=499, _) => warns.push(format!(
                "`{name}` answered {} without {{\"error\": …}}: {}",
                answer.status,
                snippet(&answer)
            )),
            (status, _) => fails.push(format!("`{name}` answered {status}: {}", snippet(&answer))),
        }
    }
    let status = if !fails.is_empty() {
        Status::Fail
    } else if !warns.is_empty() {
        Status::Warn
    } else {
        Status::Pass
    };
    report.add(rule.id, status, [fails, warns, passes].concat().join("; "));
}

fn error_shape(report: &mut Report, answer: Result<RawAnswer, HostError>, seen: &mut Seen) {
    let answer = match answer {
        Ok(answer) => answer,
        Err(error) => return report.add("errors.shape", Status::Fail, format!("preview of an unknown tool: {error}")),
    };
    seen.note(&answer);
    let shaped = has_error(answer.json().as_ref());
    let detail = format!("preview of an unknown tool answered {} {}", answer.status, snippet(&answer));
    match answer.status {
        404 if shaped => report.add("errors.shape", Status::Pass, detail),
        400..=499 if shaped => {
            report.add("errors.shape", Status::Pass, format!("{detail} (404 fits an unknown tool best)"))
        }
        200..=299 => {
            report.add("errors.shape", Status::Fail, format!("{detail}: a tool that does not exist must fail"))
        }
        _ if !shaped => {
            report.add("errors.shape", Status::Warn, format!("{detail}: errors should be {{\"error\": \"…\"}}"))
        }
        _ => {
            report.add("errors.shape", Status::Warn, format!("{detail}: an unknown tool is the caller's mistake (404)"))
        }
    }
}

fn has_error(json: Option<&Value>) -> bool {
    json.and_then(|v| v.get("error")).is_some_and(Value::is_string)
}

fn clip(text: &str, max: usize) -> String {
    let clipped: String = text.chars().filter(|c| !c.is_control()).take(max).collect();
    if text.chars().count() > max { format!("{clipped}…") } else { clipped }
}

/// The start of an answer's body, as evidence.
fn snippet(answer: &RawAnswer) -> String {
    let text = String::from_utf8_lossy(&answer.body);
    if text.trim().is_empty() { "(empty body)".to_owned() } else { clip(text.trim(), 160) }
}

/// Arguments that satisfy `schema` as simply as possible: required
/// properties only, each its `const`, first `enum` value, `default`, or
/// the least value of its type.
pub fn sample(schema: &Value) -> Value {
    sample_at(schema, 0)
}

fn sample_at(schema: &Value, depth: usize) -> Value {
    if depth > 8 {
        return Value::Null;
    }
    if let Some(value) = schema.get("const").or_else(|| schema.get("default")) {
        return value.clone();
    }
    if let Some(first) = schema.get("enum").and_then(Value::as_array).and_then(|e| e.first()) {
        return first.clone();
    }
    if let Some(first) =
        ["anyOf", "oneOf"].iter().find_map(|k| schema.get(*k).and_then(Value::as_array).and_then(|a| a.first()))
    {
        return sample_at(first, depth + 1);
    }
    let kind = match schema.get("type") {
        Some(Value::String(t)) => t.as_str(),
        Some(Value::Array(types)) => types.iter().filter_map(Value::as_str).find(|t| *t != "null").unwrap_or("null"),
        _ if schema.get("properties").is_some() => "object",
        _ => "string",
    };
    match kind {
        "object" => {
            let mut object = serde_json::Map::new();
            let properties = schema.get("properties").and_then(Value::as_object);
            for name in schema.get("required").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str)
            {
                let property = properties.and_then(|p| p.get(name)).unwrap_or(&Value::Null);
                object.insert(name.to_owned(), sample_at(property, depth + 1));
            }
            Value::Object(object)
        }
        "array" => {
            let least = schema.get("minItems").and_then(Value::as_u64).unwrap_or(0).min(4);
            let item = schema.get("items").cloned().unwrap_or(json!({}));
            Value::Array((0..least).map(|_| sample_at(&item, depth + 1)).collect())
        }
        "integer" => json!(schema.get("minimum").and_then(Value::as_i64).unwrap_or(1)),
        "number" => schema.get("minimum").cloned().unwrap_or(json!(1)),
        "boolean" => json!(false),
        "null" => Value::Null,
        _ => {
            let text = match schema.get("format").and_then(Value::as_str) {
                Some("date") => "2026-01-01".to_owned(),
                Some("date-time") => "2026-01-01T12:00:00Z".to_owned(),
                Some("email") => "check@example.com".to_owned(),
                Some("uri" | "url") => "https://example.com/".to_owned(),
                Some("uuid") => "00000000-0000-4000-8000-000000000000".to_owned(),
                _ => "example".to_owned(),
            };
            let least = schema.get("minLength").and_then(Value::as_u64).unwrap_or(0) as usize;
            let most = schema.get("maxLength").and_then(Value::as_u64).map_or(usize::MAX, |m| m as usize);
            let mut text = text;
            while text.chars().count() < least.min(256) {
                text.push('x');
            }
            Value::String(text.chars().take(most.max(least)).collect())
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::sample;

    /// Judged from the URL alone: nothing is dialled.
    #[test]
    fn plain_http_fails_to_a_public_name_and_warns_on_a_private_address() {
        let tls = |url: &str| {
            let target = crate::host::HostTarget {
                base_url: url.parse().unwrap(),
                secret: crate::secret::Secret::new("s".to_owned()),
                trusted: false,
            };
            let mut report = super::Report::default();
            super::transport(&mut report, &target);
            report.status_of("transport.tls")
        };
        assert_eq!(tls("http://tools.example/api"), Some(super::Status::Fail));
        assert_eq!(tls("http://127.0.0.1:9/api"), Some(super::Status::Warn));
        assert_eq!(tls("http://localhost/api"), Some(super::Status::Warn));
        assert_eq!(tls("https://tools.example/api"), Some(super::Status::Pass));
    }

    #[test]
    fn an_attachment_is_taken_by_a_string_property_or_an_arrays_strings_only() {
        let schema = |property: serde_json::Value| json!({"type": "object", "properties": {"photo": property}});
        assert_eq!(super::schema_problem(&schema(json!({"type": "string", "x-attachment": true}))), None);
        let list = json!({"type": "array", "items": {"type": "string", "x-attachment": true}});
        assert_eq!(super::schema_problem(&schema(list)), None);
        assert_eq!(super::schema_problem(&schema(json!({"type": "string", "x-attachment": false}))), None);
        for wrong in [
            json!({"type": "object", "x-attachment": true}),
            json!({"type": "string", "x-attachment": "yes"}),
            json!({"type": "array", "x-attachment": true, "items": {"type": "string"}}),
            json!({"type": "array", "items": {"type": "integer", "x-attachment": true}}),
        ] {
            let problem = super::schema_problem(&schema(wrong.clone())).unwrap_or_default();
            assert!(problem.contains("x-attachment"), "{wrong}: {problem}");
        }
    }

    #[test]
    fn samples_satisfy_their_schemas() {
        let schema = json!({"type": "object", "required": ["q", "n", "when", "tags", "kind", "opt"], "properties": {
            "q": {"type": "string", "minLength": 12}, "n": {"type": "integer", "minimum": 3},
            "when": {"type": "string", "format": "date"}, "tags": {"type": "array", "minItems": 1, "items": {"type": "string"}},
            "kind": {"enum": ["a", "b"]}, "opt": {"type": ["null", "boolean"]}, "skipped": {"type": "string"}}});
        let args = sample(&schema);
        assert!(crate::schema::check(&schema, &args).is_ok(), "{args}");
        assert_eq!(args["n"], 3);
        assert_eq!(args["kind"], "a");
        assert!(args.get("skipped").is_none(), "only what is required");
    }
}
