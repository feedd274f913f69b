//! The Tests page (issue #46): a suite edited (or uploaded, or saved from
//! a conversation) and run against the workspace; the history of runs; a
//! run's cases with their transcripts, the failing expectations marked;
//! two runs side by side.

use leptos::prelude::*;
use serde::{Deserialize, Serialize};

/// The editor and the history.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Tests {
    /// The suite in the editor (YAML).
    pub draft: String,
    /// Another model to run it with (by name), as typed.
    pub model: String,
    pub runs: Vec<TestRunItem>,
}

/// A run in the history.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TestRunItem {
    pub id: String,
    pub suite: String,
    pub model: Option<String>,
    /// `running`, `passed`, `failed` or `error`.
    pub status: String,
    pub passed: i64,
    pub failed: i64,
    pub cases_total: i64,
    pub created_at: String,
}

/// One run, case by case.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TestRun {
    pub item: TestRunItem,
    pub error: Option<String>,
    pub cases: Vec<TestCase>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TestCase {
    pub name: String,
    pub passed: bool,
    pub runs: u32,
    pub pass_rate: f64,
    pub required_rate: f64,
    pub failures: Vec<String>,
    pub latency_ms: u64,
    pub tokens: u64,
    /// (step, kind, text).
    pub transcript: Vec<(u64, String, String)>,
}

/// Two runs side by side.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TestComparison {
    pub a: TestRunItem,
    pub b: TestRunItem,
    /// A case's name and how it did in each (none: not in that run).
    pub rows: Vec<(String, Option<CaseCell>, Option<CaseCell>)>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CaseCell {
    pub passed: bool,
    pub pass_rate: f64,
    pub latency_ms: u64,
    pub tokens: u64,
}

/// A status as a host reads it.
fn status_label(status: &str) -> &'static str {
    match status {
        "running" => "Running…",
        "passed" => "Passed",
        "failed" => "Failed",
        "error" => "Could not run",
        _ => "Unknown",
    }
}

/// What a transcript line's kind is called.
fn kind_label(kind: &str) -> &'static str {
    match kind {
        "user" => "Visitor",
        "assistant" => "Assistant",
        "tool" => "Tool called",
        "pending_action" => "Waiting for Apply",
        "would_apply" => "Would apply (not made)",
        "applied" => "Applied",
        "cancelled" => "Declined",
        "confirmed" => "Confirmed",
        "question" => "A tool asks",
        "answered" => "Answered",
        "judge" => "Judge",
        "failed" => "Failed",
        "error" => "Error",
        _ => "Note",
    }
}

fn percent(rate: f64) -> String {
    format!("{:.0} %", rate * 100.0)
}

#[component]
pub fn TestsPage(tests: Tests) -> impl IntoView {
    let Tests { draft, model, runs } = tests;
    let choices = runs.clone();
    let history = if runs.is_empty() {
        view! { <p>"No run yet: write a suite above, or save one from a conversation."</p> }.into_any()
    } else {
        view! {
            <table class="runs">
                <thead><tr>
                    <th scope="col">"Started"</th><th scope="col">"Suite"</th><th scope="col">"Model"</th>
                    <th scope="col">"Result"</th><th scope="col">"Cases"</th>
                </tr></thead>
                <tbody>{runs.into_iter().map(|r| {
                    let href = format!("/console/tests/{}", r.id);
                    let cases = format!("{} passed, {} failed of {}", r.passed, r.failed, r.cases_total);
                    view! {
                        <tr data-status=r.status.clone()>
                            <td><a href=href>{r.created_at}</a></td>
                            <td>{r.suite}</td>
                            <td>{r.model.unwrap_or_else(|| "the workspace's".into())}</td>
                            <td>{status_label(&r.status)}</td>
                            <td>{cases}</td>
                        </tr>
                    }
                }).collect_view()}</tbody>
            </table>
            {(choices.len() >= 2).then(|| {
                let options = move |selected: usize| choices.iter().enumerate().map(|(i, r)| {
                    let label = format!("{} · {} · {}", r.created_at, r.suite, status_label(&r.status));
                    let chosen = i == selected;
                    view! { <option value=r.id.clone() selected=chosen>{label}</option> }
                }).collect_view();
                view! {
                    <form method="get" action="/console/tests/compare" class="compare">
                        <label for="compare-a">"Compare"</label>
                        <select id="compare-a" name="a">{options(1)}</select>
                        <label for="compare-b">"with"</label>
                        <select id="compare-b" name="b">{options(0)}</select>
                        <button type="submit" class="button secondary">"Compare"</button>
                    </form>
                }
            })}
        }
        .into_any()
    };
    view! {
        <section class="card" aria-labelledby="suite-title">
            <h2 id="suite-title">"A suite"</h2>
            <p class="hint">"Conversations with what you expect after each step (docs/assistant-tests.md). They run against this workspace's model, knowledge and tools; a change is recorded as “would apply”, never made, unless a case says execute: true."</p>
            <form method="post" action="/console/tests/run">
                <label for="suite">"Suite (YAML or JSON)"</label>
                <textarea id="suite" name="suite" rows="18" required spellcheck="false" class="code">{draft}</textarea>
                <label for="test-model">"Another model at your endpoint (optional)"</label>
                <input id="test-model" name="model" value=model maxlength="200" placeholder="the workspace's model"/>
                <button type="submit" class="button">"Run"</button>
            </form>
            <form method="post" action="/console/tests/upload" enctype="multipart/form-data">
                <label for="suite-file">"Or open a suite file"</label>
                <input id="suite-file" name="file" type="file" required accept=".yaml,.yml,.json"/>
                <button type="submit" class="button secondary">"Open in the editor"</button>
            </form>
        </section>
        <section class="card" aria-labelledby="runs-title">
            <h2 id="runs-title">"Runs"</h2>
            {history}
        </section>
    }
}

#[component]
pub fn TestRunPage(run: TestRun) -> impl IntoView {
    let TestRun { item, error, cases } = run;
    let edit = format!("/console/tests/{}/edit", item.id);
    let summary = format!(
        "{} · {} passed, {} failed of {} · started {}",
        status_label(&item.status),
        item.passed,
        item.failed,
        item.cases_total,
        item.created_at
    );
    view! {
        <p><a href="/console/tests">"All runs"</a></p>
        <section class="card" aria-labelledby="run-title">
            <h2 id="run-title">{item.suite.clone()}
                {item.model.clone().map(|m| view! { " " <small>{format!("({m})")}</small> })}</h2>
            <p class="run-status" role="status" data-status=item.status.clone()>{summary}</p>
            {(item.status == "running").then(|| view! { <p class="hint">"This page reloads until the run ends."</p> })}
            {error.map(|e| view! { <p class="notice error">{e}</p> })}
            <form method="post" action=edit class="inline">
                <button type="submit" class="button secondary">"Edit and run again"</button>
            </form>
        </section>
        {cases.into_iter().map(|case| {
            let mark = if case.passed { "PASS" } else { "FAIL" };
            let class = if case.passed { "card case passed" } else { "card case failed" };
            let rate = (case.runs > 1).then(|| format!(
                " · {} of {} runs ({} required)", percent(case.pass_rate), case.runs, percent(case.required_rate)
            ));
            let numbers = format!(" · {} ms · {} tokens", case.latency_ms, case.tokens);
            view! {
                <section class=class aria-label=case.name.clone()>
                    <h3><span class="mark">{mark}</span> " " {case.name.clone()}</h3>
                    <p class="hint">{rate}{numbers}</p>
                    {(!case.failures.is_empty()).then(|| view! {
                        <ul class="failures" aria-label="What failed">
                            {case.failures.into_iter().map(|f| view! { <li>{f}</li> }).collect_view()}
                        </ul>
                    })}
                    <table class="transcript-steps">
                        <thead><tr><th scope="col">"Step"</th><th scope="col">"What"</th><th scope="col">"Text"</th></tr></thead>
                        <tbody>{case.transcript.into_iter().map(|(step, kind, text)| {
                            let failed = kind == "failed";
                            view! {
                                <tr class=if failed { "failed" } else { "" } data-kind=kind.clone()>
                                    <td>{step}</td>
                                    <td>{if failed { "✗ Failed" } else { kind_label(&kind) }}</td>
                                    <td class="text">{text}</td>
                                </tr>
                            }
                        }).collect_view()}</tbody>
                    </table>
                </section>
            }
        }).collect_view()}
    }
}

#[component]
pub fn TestComparisonPage(comparison: TestComparison) -> impl IntoView {
    let TestComparison { a, b, rows } = comparison;
    let head = |r: &TestRunItem| {
        format!("{} · {}", r.created_at, r.model.clone().unwrap_or_else(|| "the workspace's model".into()))
    };
    let cell = |c: Option<CaseCell>| match c {
        Some(c) => format!(
            "{} {} · {} ms · {} tokens",
            if c.passed { "PASS" } else { "FAIL" },
            percent(c.pass_rate),
            c.latency_ms,
            c.tokens
        ),
        None => "—".into(),
    };
    view! {
        <p><a href="/console/tests">"All runs"</a></p>
        <section class="card" aria-labelledby="compare-title">
            <h2 id="compare-title">{format!("{} and {}", a.suite, b.suite)}</h2>
            <table class="comparison">
                <thead><tr>
                    <th scope="col">"Case"</th>
                    <th scope="col"><a href=format!("/console/tests/{}", a.id)>{head(&a)}</a></th>
                    <th scope="col"><a href=format!("/console/tests/{}", b.id)>{head(&b)}</a></th>
                </tr></thead>
                <tbody>{rows.into_iter().map(|(name, left, right)| {
                    let changed = left.as_ref().map(|c| c.passed) != right.as_ref().map(|c| c.passed);
                    view! {
                        <tr class=if changed { "changed" } else { "" }>
                            <th scope="row">{name}</th>
                            <td>{cell(left)}</td>
                            <td>{cell(right)}</td>
                        </tr>
                    }
                }).collect_view()}</tbody>
            </table>
        </section>
    }
}
