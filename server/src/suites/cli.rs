//! `context-assistant test`: runs a suite and says what passed.
//!
//! ```text
//! context-assistant test SUITE.yaml --workspace ID            # the server's own database (its environment)
//! context-assistant test SUITE.yaml --url URL [--api-key KEY] # a running assistant (or CA_API_KEY)
//!     [--model NAME]…  [--json FILE]  [--junit FILE]
//! ```
//!
//! Each case is printed as it ends (pass or fail, the step that failed,
//! expected against got, the reply); the exit status is 0 only when every
//! case passed, 1 when one failed or the run could not be made, 2 for a
//! usage mistake or a suite that does not read. Two or more `--model`s
//! run the suite once each and print a table of pass rates, latency and
//! tokens per case. The api key is best given as `CA_API_KEY` (an argument
//! is visible to every user of the machine).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use base64::Engine as _;
use serde_json::{Value, json};

use super::format::{self, Suite};
use super::report::{CaseReport, RunReport};

/// Largest file a step sends, read from beside the suite.
const MAX_FILE_BYTES: u64 = 20 * 1024 * 1024;

const USAGE: &str = "usage: context-assistant test SUITE.yaml (--workspace ID | --url URL [--api-key KEY]) \
    [--model NAME]... [--json FILE] [--junit FILE]\n\
    (--workspace: the server's database, configured by its environment; --url: a running assistant, with the \
    workspace's api key in --api-key or CA_API_KEY)";

/// Where the suite runs.
#[derive(Debug, Clone, PartialEq)]
pub enum Target {
    /// A running assistant's API.
    Url { base: String, key: String },
    /// This program's own server, on the database its environment names.
    Workspace(String),
}

/// A run asked for on the command line.
#[derive(Debug, Clone)]
pub struct Invocation {
    /// The suite as data, its files' content inlined (what the API takes).
    pub document: Value,
    pub suite: Suite,
    pub target: Target,
    /// The models to run it with (`None`: the workspace's).
    pub models: Vec<Option<String>>,
    pub json: Option<PathBuf>,
    pub junit: Option<PathBuf>,
}

/// What to print, and the exit status.
#[derive(Debug)]
pub struct Outcome {
    pub status: u8,
    pub out: String,
    pub err: String,
}

fn usage(why: &str) -> Outcome {
    Outcome { status: 2, out: String::new(), err: format!("context-assistant test: {why}\n{USAGE}\n") }
}

/// Reads the arguments (after `test`) and the suite they name.
pub fn invocation(args: &[String], env: impl Fn(&str) -> Option<String>) -> Result<Invocation, Outcome> {
    let mut suite_path = None;
    let (mut url, mut key, mut workspace, mut json, mut junit) = (None, None, None, None, None);
    let mut models = Vec::new();
    let mut words = args.iter();
    while let Some(word) = words.next() {
        let mut value = |name: &str| {
            words
                .next()
                .cloned()
                .filter(|v| !v.starts_with("--"))
                .ok_or_else(|| usage(&format!("{name} needs a value")))
        };
        match word.as_str() {
            "--url" => url = Some(value("--url")?),
            "--api-key" => key = Some(value("--api-key")?),
            "--workspace" => workspace = Some(value("--workspace")?),
            "--model" => models.push(Some(value("--model")?)),
            "--json" => json = Some(PathBuf::from(value("--json")?)),
            "--junit" => junit = Some(PathBuf::from(value("--junit")?)),
            flag if flag.starts_with("--") => return Err(usage(&format!("unknown option {flag}"))),
            path if suite_path.is_none() => suite_path = Some(PathBuf::from(path)),
            extra => return Err(usage(&format!("one suite at a time (also given: {extra})"))),
        }
    }
    let Some(suite_path) = suite_path else { return Err(usage("name the suite file")) };
    let target = match (url, workspace) {
        (Some(url), None) => {
            let key = key.or_else(|| env("CA_API_KEY")).filter(|k| !k.trim().is_empty());
            let Some(key) = key else { return Err(usage("--url needs the workspace's api key (CA_API_KEY)")) };
            Target::Url { base: url.trim_end_matches('/').to_owned(), key }
        }
        (None, Some(workspace)) => Target::Workspace(workspace),
        (Some(_), Some(_)) => return Err(usage("--url or --workspace, not both")),
        (None, None) => return Err(usage("say where to run it: --workspace ID or --url URL")),
    };
    if models.is_empty() {
        models.push(None);
    }
    let unreadable =
        |why: String| Outcome { status: 2, out: String::new(), err: format!("{}: {why}\n", suite_path.display()) };
    let text = std::fs::read_to_string(&suite_path).map_err(|e| unreadable(e.to_string()))?;
    let mut document = format::document(&text).map_err(|e| unreadable(e.to_string()))?;
    let folder = suite_path.parent().unwrap_or(Path::new("."));
    inline_files(&mut document, folder).map_err(unreadable)?;
    let suite = format::from_value(&document).map_err(|e| unreadable(e.to_string()))?;
    Ok(Invocation { document, suite, target, models, json, junit })
}

/// Replaces each step's file paths (relative to the suite's folder) with
/// their content, as the API takes files.
fn inline_files(document: &mut Value, folder: &Path) -> Result<(), String> {
    let Some(cases) = document.get_mut("cases").and_then(Value::as_array_mut) else { return Ok(()) };
    for step in cases.iter_mut().filter_map(|c| c.get_mut("steps")).filter_map(Value::as_array_mut).flatten() {
        let Some(files) = step.get_mut("files").and_then(Value::as_array_mut) else { continue };
        for file in files.iter_mut() {
            let Some(path) = file.as_str() else { continue };
            let at = folder.join(path);
            let size = std::fs::metadata(&at).map_err(|e| format!("{}: {e}", at.display()))?.len();
            if size > MAX_FILE_BYTES {
                return Err(format!("{}: larger than {MAX_FILE_BYTES} bytes", at.display()));
            }
            let bytes = std::fs::read(&at).map_err(|e| format!("{}: {e}", at.display()))?;
            let name = at.file_name().map_or_else(|| path.to_owned(), |n| n.to_string_lossy().into_owned());
            *file = json!({
                "name": name,
                "content_type": "application/octet-stream",
                "base64": base64::engine::general_purpose::STANDARD.encode(bytes),
            });
        }
    }
    Ok(())
}

/// A case's line as it ends.
pub fn case_line(case: &CaseReport) -> String {
    let report = RunReport { cases: vec![case.clone()], ..RunReport::default() };
    let text = report.text();
    // Its lines, without the totals of a one-case report.
    text.split("\n\n").next().unwrap_or_default().to_owned() + "\n"
}

/// Runs the suite through a running assistant's API (`POST
/// /v1/tests/runs`, then its progress), printing each case as it ends.
pub async fn run_remote(
    invocation: &Invocation,
    base: &str,
    key: &str,
    model: Option<&str>,
) -> Result<RunReport, String> {
    let client = crate::host::client_builder().timeout(Duration::from_secs(60)).build().map_err(|e| e.to_string())?;
    let mut body = json!({ "suite": invocation.document });
    if let Some(model) = model {
        body["model"] = model.into();
    }
    let answer = client
        .post(format!("{base}/v1/tests/runs"))
        .bearer_auth(key)
        .json(&body)
        .send()
        .await
        .map_err(|e| format!("{base} cannot be reached: {e}"))?;
    let status = answer.status();
    let started: Value = answer.json().await.unwrap_or(Value::Null);
    if !status.is_success() {
        let said = started.get("error").and_then(Value::as_str).unwrap_or("no reason given");
        return Err(format!("the assistant refused the run (HTTP {}): {said}", status.as_u16()));
    }
    let id = started.get("id").and_then(Value::as_str).ok_or("the assistant answered no run id")?.to_owned();
    let mut printed = 0;
    loop {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let run: Value = client
            .get(format!("{base}/v1/tests/runs/{id}"))
            .bearer_auth(key)
            .send()
            .await
            .map_err(|e| format!("{base} cannot be reached: {e}"))?
            .json()
            .await
            .map_err(|e| format!("the run's progress does not read: {e}"))?;
        let cases: Vec<CaseReport> = run
            .pointer("/report/cases")
            .cloned()
            .map(serde_json::from_value)
            .transpose()
            .map_err(|e| format!("the run's cases do not read: {e}"))?
            .unwrap_or_default();
        for case in cases.iter().skip(printed) {
            print!("{}", case_line(case));
        }
        printed = cases.len();
        match run.get("status").and_then(Value::as_str) {
            Some("passed" | "failed") => {
                return serde_json::from_value(run["report"].clone())
                    .map_err(|e| format!("the report does not read: {e}"));
            }
            Some("error") => {
                let why = run.get("error").and_then(Value::as_str).unwrap_or("no reason given");
                return Err(format!("the run failed: {why}"));
            }
            _ => {}
        }
    }
}

/// Writes the files asked for and says how the runs went: the exit
/// status 0 only when every case of every run passed.
pub fn finish(invocation: &Invocation, reports: &[RunReport]) -> Outcome {
    let mut out = String::new();
    for report in reports {
        let text = report.text();
        out.push_str(text.rsplit("\n\n").next().unwrap_or_default());
    }
    if reports.len() > 1 {
        out.push('\n');
        out.push_str(&comparison(reports));
    }
    let mut err = String::new();
    let mut status = if reports.iter().all(RunReport::ok) { 0 } else { 1 };
    let mut write = |path: &Path, text: String| {
        if let Err(e) = std::fs::write(path, text) {
            let _ = writeln!(err, "{}: {e}", path.display());
            status = 1;
        }
    };
    if let Some(path) = &invocation.json {
        let json = match reports {
            [one] => serde_json::to_value(one),
            many => serde_json::to_value(json!({ "models": many })),
        }
        .expect("a report serializes");
        write(path, format!("{json:#}\n"));
    }
    if let Some(path) = &invocation.junit {
        write(path, super::report::junit(reports));
    }
    Outcome { status, out, err }
}

/// Two or more runs side by side: each case's pass rate, mean latency and
/// tokens under each model.
fn comparison(reports: &[RunReport]) -> String {
    let label = |r: &RunReport| r.model.clone().unwrap_or_else(|| "workspace model".into());
    let mut out = format!("{:<32}", "case");
    for report in reports {
        let _ = write!(out, " | {:<28}", label(report));
    }
    out.push('\n');
    let names: Vec<&str> = reports[0].cases.iter().map(|c| c.name.as_str()).collect();
    for name in names {
        let shown: String = name.chars().take(32).collect();
        let _ = write!(out, "{shown:<32}");
        for report in reports {
            let cell = match report.cases.iter().find(|c| c.name == name) {
                Some(c) => format!("{:>3.0} %  {:>6} ms  {:>6} tok", c.pass_rate * 100.0, c.latency_ms, c.tokens),
                None => "-".into(),
            };
            let _ = write!(out, " | {cell:<28}");
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| (*w).to_owned()).collect()
    }

    #[test]
    fn two_models_are_set_side_by_side_and_any_failure_fails_the_run() {
        let case = |name: &str, passed: bool, rate: f64, ms: u64| CaseReport {
            name: name.into(),
            passed,
            runs: 2,
            pass_rate: rate,
            required_rate: 1.0,
            latency_ms: ms,
            tokens: 300,
            ..CaseReport::default()
        };
        let a = RunReport {
            suite: "s".into(),
            model: Some("model-a".into()),
            passed: 2,
            cases: vec![case("menu", true, 1.0, 120), case("apply", true, 1.0, 90)],
            ..RunReport::default()
        };
        let b = RunReport {
            suite: "s".into(),
            model: Some("model-b".into()),
            passed: 1,
            failed: 1,
            cases: vec![case("menu", true, 1.0, 340), case("apply", false, 0.5, 80)],
            ..RunReport::default()
        };
        let (_dir, path) = suite_file("name: s\ncases: [{name: c, steps: [{user: hi}]}]\n");
        let invocation = invocation(&args(&[&path, "--workspace", "w"]), |_| None).unwrap();
        let outcome = finish(&invocation, &[a.clone(), b]);
        assert_eq!(outcome.status, 1, "one case failed with model-b");
        let lines: Vec<&str> = outcome.out.lines().collect();
        let head = lines.iter().find(|l| l.starts_with("case")).unwrap();
        assert!(head.contains("model-a") && head.contains("model-b"), "{}", outcome.out);
        let apply = lines.iter().find(|l| l.starts_with("apply")).unwrap();
        assert!(apply.contains("100 %") && apply.contains("50 %") && apply.contains("80 ms"), "{apply}");
        assert_eq!(finish(&invocation, &[a]).status, 0);
    }

    fn suite_file(text: &str) -> (tempfile::TempDir, String) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("s.yaml"), text).unwrap();
        std::fs::write(dir.path().join("note.txt"), "hello").unwrap();
        let path = dir.path().join("s.yaml").to_string_lossy().into_owned();
        (dir, path)
    }

    #[test]
    fn the_arguments_name_the_suite_the_target_and_the_files() {
        let (_dir, path) = suite_file("name: s\ncases: [{name: c, steps: [{user: read this, files: [note.txt]}]}]\n");
        let none = |_: &str| None;
        let inv = invocation(&args(&[&path, "--workspace", "ws_1", "--json", "out.json"]), none).unwrap();
        assert_eq!(inv.target, Target::Workspace("ws_1".into()));
        assert_eq!(inv.models, [None]);
        let file = &inv.document["cases"][0]["steps"][0]["files"][0];
        assert_eq!((file["name"].as_str(), file["base64"].as_str()), (Some("note.txt"), Some("aGVsbG8=")));
        let key = |name: &str| (name == "CA_API_KEY").then(|| "k".to_owned());
        let inv = invocation(&args(&[&path, "--url", "http://a/", "--model", "m1", "--model", "m2"]), key).unwrap();
        assert_eq!(inv.target, Target::Url { base: "http://a".into(), key: "k".into() });
        assert_eq!(inv.models, [Some("m1".into()), Some("m2".into())]);

        let refused = |words: &[&str]| invocation(&args(words), none).err().unwrap();
        assert_eq!(refused(&[&path]).status, 2);
        assert!(refused(&[&path, "--url", "http://a"]).err.contains("CA_API_KEY"));
        assert!(refused(&[&path, "--workspace"]).err.contains("--workspace needs a value"));
        assert!(refused(&[&path, "--frob"]).err.contains("unknown option --frob"));
        let (_bad, bad) = suite_file("name: s\ncases: [{name: c, steps: [{user: hi, files: [missing.png]}]}]\n");
        assert!(refused(&[&bad, "--workspace", "w"]).err.contains("missing.png"));
    }
}
