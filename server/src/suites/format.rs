//! A suite as a host writes it (YAML or JSON): its cases, each a
//! conversation of steps — what the visitor says or does — with what is
//! expected after each. Read into [`Suite`] with every mistake named by
//! where it is (`cases[1] "adding needs Apply" step 2 expect.tool_called:
//! …`): a typo in an expectation's name is an error, never an expectation
//! silently skipped.
//!
//! Read through `serde_json::Value` (YAML is read into it first) rather
//! than derived structs: one reader for both formats, promptfoo's names
//! beside ours, and errors that say which case and step.

use std::collections::BTreeMap;
use std::fmt;

use serde_json::{Map, Value};

/// Largest suite read, in bytes.
pub const MAX_SUITE_BYTES: usize = 512 * 1024;
/// Most cases a suite may have.
pub const MAX_CASES: usize = 200;
/// Most steps a case may have.
pub const MAX_STEPS: usize = 40;
/// Most runs of one case.
pub const MAX_REPEAT: u32 = 20;
/// Most runs of a whole suite (cases × their repeats).
pub const MAX_RUNS: u32 = 400;

/// A suite of cases.
#[derive(Debug, Clone, PartialEq)]
pub struct Suite {
    pub name: String,
    /// The share of runs each case must pass when it says none itself
    /// (1.0: every run).
    pub pass_rate: f64,
    /// The model that grades `judge` expectations, at the workspace's
    /// model's endpoint (none: the workspace's model itself).
    pub judge_model: Option<String>,
    pub cases: Vec<Case>,
}

/// One conversation, run `repeat` times.
#[derive(Debug, Clone, PartialEq)]
pub struct Case {
    pub name: String,
    pub repeat: u32,
    /// The share of its runs that must pass.
    pub pass_rate: f64,
    /// Recorded outputs by tool name: a `get` of one of these answers this
    /// instead of calling the host.
    pub tools: BTreeMap<String, Value>,
    /// A change the visitor applies is executed at the host (a test host);
    /// otherwise it is recorded as "would apply".
    pub execute: bool,
    /// The visitor's language (`en`, `es`…): the widget's, sent with each message.
    pub lang: Option<String>,
    /// The visitor's permissions, as an embed token would carry them.
    pub permissions: Vec<String>,
    pub steps: Vec<Step>,
}

/// What the visitor does, and what is expected after it.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    pub action: Action,
    pub expect: Vec<Expectation>,
}

/// What the visitor does at a step.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Sends a message, with files.
    User { text: String, files: Vec<File> },
    /// Applies the pending action.
    Apply,
    /// Cancels the pending action, perhaps saying why.
    Cancel(Option<String>),
    /// Confirms a delete (its first of two steps).
    Confirm,
    /// Answers the open question (an elicitation) with these fields.
    Answer(Map<String, Value>),
}

/// A file sent with a message: a path (read by the command line, beside
/// the suite) or its content (what the API takes).
#[derive(Debug, Clone, PartialEq)]
pub enum File {
    Path(String),
    Inline { name: String, content_type: String, base64: String },
}

/// One expectation of a step.
#[derive(Debug, Clone, PartialEq)]
pub enum Expectation {
    /// A tool was called in the step, its arguments including these.
    ToolCalled {
        name: String,
        arguments: Option<Value>,
    },
    ToolNotCalled(String),
    /// The step ended with this change waiting for Apply.
    PendingAction {
        tool: String,
        arguments: Option<Value>,
    },
    NoPendingAction,
    Contains {
        text: String,
        ignore_case: bool,
    },
    NotContains {
        text: String,
        ignore_case: bool,
    },
    /// At least one of them (all of them with `all`).
    ContainsSome {
        texts: Vec<String>,
        ignore_case: bool,
        all: bool,
    },
    Regex {
        pattern: String,
        matches: bool,
    },
    /// The reply is in this language (an ISO 639-1 or 639-3 code).
    Language(String),
    /// A cited source's address or title contains this.
    SourcesInclude(String),
    /// The reply says it does not know (or, false, does not say so).
    SaysItDoesNotKnow(bool),
    /// A judge model grades the reply against this rubric.
    Judge(String),
    MaxLatencyMs(u64),
    MaxTokens(u64),
}

/// Where a suite is wrong, and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FormatError {
    pub at: String,
    pub message: String,
}

impl fmt::Display for FormatError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.at.is_empty() { write!(f, "{}", self.message) } else { write!(f, "{}: {}", self.at, self.message) }
    }
}

impl std::error::Error for FormatError {}

fn error(at: &str, message: impl Into<String>) -> FormatError {
    FormatError { at: at.to_owned(), message: message.into() }
}

/// The names `expect` (and promptfoo's `assert` list) read.
pub const EXPECTATIONS: &[&str] = &[
    "tool_called",
    "tool_not_called",
    "pending_action",
    "no_pending_action",
    "reply_contains",
    "reply_not_contains",
    "regex",
    "language",
    "sources_include",
    "says_it_does_not_know",
    "judge",
    "max_latency_ms",
    "max_tokens",
    // promptfoo's, where they mean the same.
    "contains",
    "icontains",
    "not-contains",
    "not-icontains",
    "contains-any",
    "contains-all",
    "icontains-any",
    "icontains-all",
    "not-regex",
    "llm-rubric",
    "latency",
];

/// Reads a suite from YAML or JSON text (JSON is YAML too).
pub fn parse(text: &str) -> Result<Suite, FormatError> {
    from_value(&document(text)?)
}

/// A suite's text as data, not yet checked.
pub fn document(text: &str) -> Result<Value, FormatError> {
    if text.len() > MAX_SUITE_BYTES {
        return Err(error("", format!("the suite is larger than {MAX_SUITE_BYTES} bytes")));
    }
    match serde_json::from_str(text) {
        Ok(value) => Ok(value),
        Err(_) => yaml_serde::from_str(text).map_err(|e| error("", format!("not YAML or JSON: {e}"))),
    }
}

/// Reads a suite already parsed.
pub fn from_value(value: &Value) -> Result<Suite, FormatError> {
    let object = value.as_object().ok_or_else(|| error("", "a suite is a mapping with `name` and `cases`"))?;
    known_keys(object, "", &["name", "description", "pass_rate", "judge_model", "cases"])?;
    let name = required_text(object, "name", "")?;
    let pass_rate = rate(object.get("pass_rate"), "pass_rate")?.unwrap_or(1.0);
    let judge_model = optional_text(object, "judge_model", "")?;
    let cases = object
        .get("cases")
        .and_then(Value::as_array)
        .filter(|c| !c.is_empty())
        .ok_or_else(|| error("cases", "a suite needs a list of cases"))?;
    if cases.len() > MAX_CASES {
        return Err(error("cases", format!("at most {MAX_CASES} cases")));
    }
    let cases = cases.iter().enumerate().map(|(i, c)| case(c, i, pass_rate)).collect::<Result<Vec<_>, _>>()?;
    let mut names = std::collections::HashSet::new();
    for case in &cases {
        if !names.insert(case.name.as_str()) {
            return Err(error("cases", format!("two cases are named \"{}\"", case.name)));
        }
    }
    let runs: u32 = cases.iter().map(|c| c.repeat).sum();
    if runs > MAX_RUNS {
        return Err(error("cases", format!("{runs} runs in all (cases × repeat); at most {MAX_RUNS}")));
    }
    Ok(Suite { name, pass_rate, judge_model, cases })
}

fn case(value: &Value, index: usize, default_rate: f64) -> Result<Case, FormatError> {
    let mut at = format!("cases[{index}]");
    let object = value.as_object().ok_or_else(|| error(&at, "a case is a mapping with `name` and `steps`"))?;
    let name = required_text(object, "name", &at)?;
    at = format!("{at} \"{name}\"");
    known_keys(
        object,
        &at,
        &["name", "description", "repeat", "pass_rate", "tools", "execute", "lang", "permissions", "steps"],
    )?;
    let repeat = match object.get("repeat") {
        None => 1,
        Some(v) => {
            v.as_u64()
                .filter(|n| (1..=u64::from(MAX_REPEAT)).contains(n))
                .ok_or_else(|| error(&at, format!("repeat: a whole number from 1 to {MAX_REPEAT}")))? as u32
        }
    };
    let pass_rate = rate(object.get("pass_rate"), &format!("{at} pass_rate"))?.unwrap_or(default_rate);
    let tools = match object.get("tools") {
        None => BTreeMap::new(),
        Some(Value::Object(tools)) => tools.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
        Some(_) => return Err(error(&at, "tools: a mapping of tool names to the outputs they answer")),
    };
    let execute = boolean(object.get("execute"), &format!("{at} execute"))?.unwrap_or(false);
    let lang = optional_text(object, "lang", &at)?;
    let permissions = match object.get("permissions") {
        None => Vec::new(),
        Some(v) => texts(v).ok_or_else(|| error(&at, "permissions: a list of strings"))?,
    };
    let steps = object
        .get("steps")
        .and_then(Value::as_array)
        .filter(|s| !s.is_empty())
        .ok_or_else(|| error(&at, "a case needs a list of steps"))?;
    if steps.len() > MAX_STEPS {
        return Err(error(&at, format!("at most {MAX_STEPS} steps")));
    }
    let steps =
        steps.iter().enumerate().map(|(i, s)| step(s, &format!("{at} step {}", i + 1))).collect::<Result<_, _>>()?;
    Ok(Case { name, repeat, pass_rate, tools, execute, lang, permissions, steps })
}

fn step(value: &Value, at: &str) -> Result<Step, FormatError> {
    let object = value.as_object().ok_or_else(|| error(at, "a step is a mapping such as `user: …`"))?;
    known_keys(object, at, &["user", "files", "apply", "cancel", "confirm", "answer", "expect", "assert"])?;
    let doing: Vec<&str> =
        ["user", "apply", "cancel", "confirm", "answer"].into_iter().filter(|k| object.contains_key(*k)).collect();
    let action = match doing[..] {
        ["user"] => {
            let text = object["user"].as_str().ok_or_else(|| error(at, "user: the visitor's message, as text"))?;
            let files = match object.get("files") {
                None => Vec::new(),
                Some(Value::Array(files)) => files.iter().map(|f| file(f, at)).collect::<Result<_, _>>()?,
                Some(_) => return Err(error(at, "files: a list of paths")),
            };
            if text.trim().is_empty() && files.is_empty() {
                return Err(error(at, "user: an empty message needs files"));
            }
            Action::User { text: text.to_owned(), files }
        }
        ["apply"] => match object["apply"] {
            Value::Bool(true) => Action::Apply,
            _ => return Err(error(at, "apply: true (to decline, use cancel)")),
        },
        ["confirm"] => match object["confirm"] {
            Value::Bool(true) => Action::Confirm,
            _ => return Err(error(at, "confirm: true")),
        },
        ["cancel"] => match &object["cancel"] {
            Value::Bool(true) | Value::Null => Action::Cancel(None),
            Value::String(reason) => Action::Cancel(Some(reason.clone()).filter(|r| !r.trim().is_empty())),
            _ => return Err(error(at, "cancel: true, or the visitor's reason")),
        },
        ["answer"] => match &object["answer"] {
            Value::Object(fields) => Action::Answer(fields.clone()),
            _ => return Err(error(at, "answer: a mapping of the question's fields to their values")),
        },
        [] => return Err(error(at, "a step needs one of user, apply, cancel, confirm, answer")),
        _ => {
            return Err(error(
                at,
                format!("one of user, apply, cancel, confirm, answer per step, not {}", doing.join(" and ")),
            ));
        }
    };
    if object.contains_key("files") && !matches!(action, Action::User { .. }) {
        return Err(error(at, "files go with a user message"));
    }
    let mut expect = Vec::new();
    match object.get("expect") {
        None | Some(Value::Null) => {}
        Some(Value::Object(map)) => {
            for (name, value) in map {
                expect.extend(expectation(name, value, None, &format!("{at} expect.{name}"))?);
            }
        }
        Some(_) => return Err(error(at, "expect: a mapping such as `reply_contains: …`")),
    }
    match object.get("assert") {
        None | Some(Value::Null) => {}
        Some(Value::Array(list)) => {
            for (i, item) in list.iter().enumerate() {
                let at = format!("{at} assert[{i}]");
                let item = item.as_object().ok_or_else(|| error(&at, "an assertion is a mapping with `type`"))?;
                known_keys(item, &at, &["type", "value", "threshold"])?;
                let kind =
                    item.get("type").and_then(Value::as_str).ok_or_else(|| error(&at, "type: the assertion's name"))?;
                let value = item.get("value").cloned().unwrap_or(Value::Null);
                expect.extend(expectation(kind, &value, item.get("threshold"), &format!("{at} {kind}"))?);
            }
        }
        Some(_) => return Err(error(at, "assert: a list of `{type, value}`, as promptfoo writes them")),
    }
    Ok(Step { action, expect })
}

fn file(value: &Value, at: &str) -> Result<File, FormatError> {
    match value {
        Value::String(path) if !path.trim().is_empty() => Ok(File::Path(path.clone())),
        Value::Object(inline) => {
            let text = |key: &str| inline.get(key).and_then(Value::as_str).map(str::to_owned);
            match (text("name"), text("base64")) {
                (Some(name), Some(base64)) => Ok(File::Inline {
                    name,
                    content_type: text("content_type").unwrap_or_else(|| "application/octet-stream".into()),
                    base64,
                }),
                _ => Err(error(at, "files: a path, or {name, content_type, base64}")),
            }
        }
        _ => Err(error(at, "files: a path, or {name, content_type, base64}")),
    }
}

/// The expectations `name: value` makes (a list makes several).
fn expectation(
    name: &str,
    value: &Value,
    threshold: Option<&Value>,
    at: &str,
) -> Result<Vec<Expectation>, FormatError> {
    let one_or_many = |value: &Value| -> Result<Vec<String>, FormatError> {
        match value {
            Value::String(s) if !s.is_empty() => Ok(vec![s.clone()]),
            Value::Array(_) => texts(value)
                .filter(|t| !t.is_empty() && t.iter().all(|s| !s.is_empty()))
                .ok_or_else(|| error(at, "a string or a list of strings")),
            _ => Err(error(at, "a string or a list of strings")),
        }
    };
    let number = |value: &Value| value.as_u64().ok_or_else(|| error(at, "a whole number"));
    let each = |texts: Vec<String>, make: &dyn Fn(String) -> Expectation| texts.into_iter().map(make).collect();
    Ok(match name {
        "tool_called" => match value {
            Value::Array(list) => list.iter().map(|v| called(v, at)).collect::<Result<_, _>>()?,
            other => vec![called(other, at)?],
        },
        "tool_not_called" => each(one_or_many(value)?, &Expectation::ToolNotCalled),
        "pending_action" => {
            let (tool, arguments) = match value {
                Value::String(tool) => (tool.clone(), None),
                Value::Object(o) => {
                    known_keys(o, at, &["tool", "arguments"])?;
                    let tool =
                        o.get("tool").and_then(Value::as_str).ok_or_else(|| error(at, "tool: the change's tool"))?;
                    (tool.to_owned(), o.get("arguments").cloned())
                }
                _ => return Err(error(at, "{tool, arguments}")),
            };
            vec![Expectation::PendingAction { tool, arguments }]
        }
        "no_pending_action" => match value {
            Value::Bool(true) => vec![Expectation::NoPendingAction],
            _ => return Err(error(at, "true")),
        },
        "reply_contains" | "icontains" => {
            each(one_or_many(value)?, &|text| Expectation::Contains { text, ignore_case: true })
        }
        "contains" => each(one_or_many(value)?, &|text| Expectation::Contains { text, ignore_case: false }),
        "reply_not_contains" | "not-icontains" => {
            each(one_or_many(value)?, &|text| Expectation::NotContains { text, ignore_case: true })
        }
        "not-contains" => each(one_or_many(value)?, &|text| Expectation::NotContains { text, ignore_case: false }),
        "contains-any" | "contains-all" | "icontains-any" | "icontains-all" => vec![Expectation::ContainsSome {
            texts: one_or_many(value)?,
            ignore_case: name.starts_with('i'),
            all: name.ends_with("all"),
        }],
        "regex" | "not-regex" => {
            let mut out = Vec::new();
            for pattern in one_or_many(value)? {
                regex::Regex::new(&pattern).map_err(|e| error(at, format!("not a regular expression: {e}")))?;
                out.push(Expectation::Regex { pattern, matches: name == "regex" });
            }
            out
        }
        "language" => match value.as_str() {
            Some(code) if crate::suites::language::known(code) => vec![Expectation::Language(code.to_owned())],
            _ => return Err(error(at, "a language code such as `es` or `spa`")),
        },
        "sources_include" => each(one_or_many(value)?, &Expectation::SourcesInclude),
        "says_it_does_not_know" => match value {
            Value::Bool(b) => vec![Expectation::SaysItDoesNotKnow(*b)],
            _ => return Err(error(at, "true or false")),
        },
        "judge" | "llm-rubric" => match value.as_str().map(str::trim) {
            Some(rubric) if !rubric.is_empty() && rubric.len() <= 4000 => vec![Expectation::Judge(rubric.to_owned())],
            _ => return Err(error(at, "the rubric, as text (at most 4,000 characters)")),
        },
        "max_latency_ms" => vec![Expectation::MaxLatencyMs(number(value)?)],
        // promptfoo's `latency` gives its limit as `threshold`.
        "latency" => vec![Expectation::MaxLatencyMs(number(threshold.unwrap_or(value))?)],
        "max_tokens" => vec![Expectation::MaxTokens(number(value)?)],
        other => {
            return Err(error(
                at,
                format!("no expectation is named `{other}`; these are: {}", EXPECTATIONS.join(", ")),
            ));
        }
    })
}

fn called(value: &Value, at: &str) -> Result<Expectation, FormatError> {
    match value {
        Value::String(name) if !name.is_empty() => Ok(Expectation::ToolCalled { name: name.clone(), arguments: None }),
        Value::Object(o) => {
            known_keys(o, at, &["name", "arguments"])?;
            let name = o
                .get("name")
                .and_then(Value::as_str)
                .filter(|n| !n.is_empty())
                .ok_or_else(|| error(at, "name: the tool's name"))?;
            Ok(Expectation::ToolCalled { name: name.to_owned(), arguments: o.get("arguments").cloned() })
        }
        _ => Err(error(at, "a tool's name, or {name, arguments}")),
    }
}

fn known_keys(object: &Map<String, Value>, at: &str, known: &[&str]) -> Result<(), FormatError> {
    match object.keys().find(|k| !known.contains(&k.as_str())) {
        Some(unknown) => Err(error(at, format!("`{unknown}` is not known here; these are: {}", known.join(", ")))),
        None => Ok(()),
    }
}

fn required_text(object: &Map<String, Value>, key: &str, at: &str) -> Result<String, FormatError> {
    optional_text(object, key, at)?.ok_or_else(|| error(at, format!("{key}: required, as text")))
}

fn optional_text(object: &Map<String, Value>, key: &str, at: &str) -> Result<Option<String>, FormatError> {
    match object.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if !s.trim().is_empty() && s.chars().count() <= 200 => Ok(Some(s.trim().to_owned())),
        Some(_) => Err(error(at, format!("{key}: text of 1 to 200 characters"))),
    }
}

fn rate(value: Option<&Value>, at: &str) -> Result<Option<f64>, FormatError> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_f64()
            .filter(|r| (0.0..=1.0).contains(r))
            .map(Some)
            .ok_or_else(|| error(at, "a share from 0 to 1, such as 0.9")),
    }
}

fn boolean(value: Option<&Value>, at: &str) -> Result<Option<bool>, FormatError> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(_) => Err(error(at, "true or false")),
    }
}

fn texts(value: &Value) -> Option<Vec<String>> {
    value.as_array()?.iter().map(|v| v.as_str().map(str::to_owned)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const ISSUE_EXAMPLE: &str = r#"
name: bistro
cases:
  - name: adding needs Apply
    repeat: 3            # optional; the case's pass rate is reported
    steps:
      - user: "add two margheritas"
        expect:
          tool_called: {name: show_menu}          # optional per step
          pending_action: {tool: add_to_cart, arguments: {quantity: 2}}
      - apply: true       # or cancel: "reason", confirm: true, answer: {field: value}
        expect:
          reply_contains: ["added"]
          icontains: "margherita"                 # promptfoo's names are read too
"#;

    #[test]
    fn the_issues_example_reads_as_written() {
        let suite = parse(ISSUE_EXAMPLE).unwrap();
        assert_eq!(suite.name, "bistro");
        let case = &suite.cases[0];
        assert_eq!((case.name.as_str(), case.repeat, case.pass_rate), ("adding needs Apply", 3, 1.0));
        assert_eq!(case.steps[0].action, Action::User { text: "add two margheritas".into(), files: vec![] });
        // A step's expectations, by name.
        assert_eq!(
            case.steps[0].expect,
            [
                Expectation::PendingAction {
                    tool: "add_to_cart".into(),
                    arguments: Some(serde_json::json!({"quantity": 2}))
                },
                Expectation::ToolCalled { name: "show_menu".into(), arguments: None },
            ]
        );
        assert_eq!(case.steps[1].action, Action::Apply);
        assert_eq!(
            case.steps[1].expect,
            [
                Expectation::Contains { text: "margherita".into(), ignore_case: true },
                Expectation::Contains { text: "added".into(), ignore_case: true },
            ]
        );
    }

    #[test]
    fn json_and_promptfoos_assert_list_read_too() {
        let suite = parse(
            r#"{"name": "s", "pass_rate": 0.5, "cases": [{"name": "c", "steps": [
                {"user": "hi", "assert": [{"type": "contains", "value": "Hello"},
                                          {"type": "not-icontains", "value": ["error", "sorry"]},
                                          {"type": "latency", "threshold": 5000},
                                          {"type": "llm-rubric", "value": "is polite"}]},
                {"cancel": "too dear"}, {"confirm": true}, {"answer": {"size": "large"}}]}]}"#,
        )
        .unwrap();
        let case = &suite.cases[0];
        assert_eq!(case.pass_rate, 0.5, "the suite's rate is the case's default");
        assert_eq!(
            case.steps[0].expect,
            [
                Expectation::Contains { text: "Hello".into(), ignore_case: false },
                Expectation::NotContains { text: "error".into(), ignore_case: true },
                Expectation::NotContains { text: "sorry".into(), ignore_case: true },
                Expectation::MaxLatencyMs(5000),
                Expectation::Judge("is polite".into()),
            ]
        );
        assert_eq!(case.steps[1].action, Action::Cancel(Some("too dear".into())));
        assert_eq!(case.steps[2].action, Action::Confirm);
        assert!(matches!(&case.steps[3].action, Action::Answer(f) if f["size"] == "large"));
    }

    #[test]
    fn every_mistake_is_named_where_it_is() {
        let wrong = |yaml: &str| parse(yaml).unwrap_err().to_string();
        let typo =
            wrong("name: s\ncases:\n  - name: c\n    steps:\n      - user: hi\n        expect: {reply_contain: x}\n");
        assert!(typo.starts_with("cases[0] \"c\" step 1 expect.reply_contain: no expectation is named"), "{typo}");
        assert!(typo.contains("reply_contains"), "the known names are listed: {typo}");
        let two = wrong("name: s\ncases:\n  - name: c\n    steps:\n      - {user: hi, apply: true}\n");
        assert!(
            two.contains("step 1: one of user, apply, cancel, confirm, answer per step, not user and apply"),
            "{two}"
        );
        assert!(wrong("name: s\ncases: []\n").contains("a suite needs a list of cases"));
        assert!(wrong("cases: [{name: c, steps: [{user: hi}]}]").contains("name: required"));
        let regex = wrong("name: s\ncases: [{name: c, steps: [{user: hi, expect: {regex: '('}}]}]");
        assert!(regex.contains("not a regular expression"), "{regex}");
        let repeat = wrong("name: s\ncases: [{name: c, repeat: 0, steps: [{user: hi}]}]");
        assert!(repeat.contains("repeat: a whole number from 1 to 20"), "{repeat}");
        let dup = wrong("name: s\ncases: [{name: c, steps: [{user: hi}]}, {name: c, steps: [{user: ho}]}]");
        assert!(dup.contains("two cases are named \"c\""), "{dup}");
        assert!(wrong("name: s\ncases: [{name: c, steps: [{apply: false}]}]").contains("apply: true"));
        assert!(wrong("name: s\ncases: [{name: c, stepz: []}]").contains("`stepz` is not known here"));
        assert!(
            wrong("name: s\ncases: [{name: c, steps: [{user: hi, expect: {language: klingon}}]}]")
                .contains("language code")
        );
        assert!(wrong("{not yaml: [").contains("not YAML or JSON"));
        assert!(wrong(&"x".repeat(MAX_SUITE_BYTES + 1)).contains("larger than"));
    }

    #[test]
    fn a_suite_too_large_to_run_is_refused() {
        let cases: Vec<String> =
            (0..30).map(|i| format!("{{name: c{i}, repeat: 20, steps: [{{user: hi}}]}}")).collect();
        let error = parse(&format!("name: s\ncases: [{}]", cases.join(", "))).unwrap_err();
        assert!(error.to_string().contains("600 runs in all"), "{error}");
    }
}
