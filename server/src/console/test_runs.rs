//! The Tests page (issue #46): a suite edited, uploaded or saved from a
//! conversation, run over `POST /v1/tests/runs`; the runs; one run case by
//! case (the page reloads itself while it runs); two runs compared — every
//! call the public API's, in process.

use ::console::{Body as PageBody, CaseCell, Notice, Page, TestCase, TestComparison, TestRun, TestRunItem, Tests};
use axum::extract::multipart::{Multipart, MultipartRejection};
use axum::extract::{Form, Path, Query};
use axum::http::{HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use serde::Deserialize;
use serde_json::{Value, json};

use super::shared::{InWorkspace, notice, page, problem, render, segment, text};

/// A new suite's starting point in the editor.
const EXAMPLE: &str = "name: my suite\ncases:\n  - name: the first question\n    steps:\n      - user: \"What can you do?\"\n        expect:\n          no_pending_action: true\n";

/// The largest suite file opened in the editor.
const MAX_SUITE_FILE: usize = crate::suites::format::MAX_SUITE_BYTES;

impl InWorkspace {
    /// The editor (with `draft`) and the history.
    async fn tests_page(&self, draft: &str, model: &str, notice: Option<Notice>) -> Result<Page, Response> {
        let workspace = self.workspace().await?;
        let listed = self.call(Method::GET, "/v1/tests/runs", None).await?;
        let runs = listed.json["runs"].as_array().cloned().unwrap_or_default().iter().map(item).collect();
        let draft = if draft.trim().is_empty() { EXAMPLE.to_owned() } else { draft.to_owned() };
        let body = PageBody::Tests(Tests { draft, model: model.to_owned(), runs });
        Ok(page("Tests", text(&workspace["name"]), notice, body))
    }
}

fn item(value: &Value) -> TestRunItem {
    TestRunItem {
        id: text(&value["id"]),
        suite: text(&value["suite"]),
        model: value["model"].as_str().map(str::to_owned),
        status: text(&value["status"]),
        passed: value["passed"].as_i64().unwrap_or(0),
        failed: value["failed"].as_i64().unwrap_or(0),
        cases_total: value["cases_total"].as_i64().unwrap_or(0),
        created_at: text(&value["created_at"]),
    }
}

fn case(value: &Value) -> TestCase {
    TestCase {
        name: text(&value["name"]),
        passed: value["passed"].as_bool().unwrap_or(false),
        runs: value["runs"].as_u64().unwrap_or(0) as u32,
        pass_rate: value["pass_rate"].as_f64().unwrap_or(0.0),
        required_rate: value["required_rate"].as_f64().unwrap_or(1.0),
        failures: value["failures"].as_array().map(|f| f.iter().map(text).collect()).unwrap_or_default(),
        latency_ms: value["latency_ms"].as_u64().unwrap_or(0),
        tokens: value["tokens"].as_u64().unwrap_or(0),
        transcript: value["transcript"]
            .as_array()
            .map(|entries| {
                entries.iter().map(|e| (e["step"].as_u64().unwrap_or(0), text(&e["kind"]), text(&e["text"]))).collect()
            })
            .unwrap_or_default(),
    }
}

pub(super) async fn tests(console: InWorkspace) -> Result<Response, Response> {
    Ok(render(StatusCode::OK, console.tests_page("", "", None).await?))
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub(super) struct RunForm {
    suite: String,
    model: String,
}

/// Starts a run of the editor's suite; to its page, or back to the editor
/// (the suite kept) saying why not.
pub(super) async fn run(console: InWorkspace, Form(form): Form<RunForm>) -> Result<Response, Response> {
    let mut body = json!({ "suite": form.suite });
    if !form.model.trim().is_empty() {
        body["model"] = json!(form.model.trim());
    }
    let answer = console.call(Method::POST, "/v1/tests/runs", Some(body)).await?;
    if !answer.ok() {
        let status = if answer.status.is_client_error() { answer.status } else { StatusCode::BAD_GATEWAY };
        return Ok(render(status, console.tests_page(&form.suite, &form.model, answer.problem()).await?));
    }
    Ok(Redirect::to(&format!("/console/tests/{}", segment(&text(&answer.json["id"])))).into_response())
}

/// Opens a suite file in the editor.
pub(super) async fn upload(
    console: InWorkspace,
    multipart: Result<Multipart, MultipartRejection>,
) -> Result<Response, Response> {
    let refused = |why: &str| problem(why.to_owned());
    let Ok(mut multipart) = multipart else {
        return Ok(render(StatusCode::BAD_REQUEST, console.tests_page("", "", refused("Choose a suite file.")).await?));
    };
    while let Ok(Some(field)) = multipart.next_field().await {
        if field.name() != Some("file") {
            continue;
        }
        let Ok(bytes) = field.bytes().await else { break };
        if bytes.len() > MAX_SUITE_FILE {
            let why = refused("The suite is too large (512 KB at most).");
            return Ok(render(StatusCode::PAYLOAD_TOO_LARGE, console.tests_page("", "", why).await?));
        }
        let Ok(suite) = String::from_utf8(bytes.to_vec()) else {
            let why = refused("The file is not text (a suite is YAML or JSON).");
            return Ok(render(StatusCode::BAD_REQUEST, console.tests_page("", "", why).await?));
        };
        let said = notice("Opened: edit it, then run it.");
        return Ok(render(StatusCode::OK, console.tests_page(&suite, "", said).await?));
    }
    Ok(render(StatusCode::BAD_REQUEST, console.tests_page("", "", refused("Choose a suite file.")).await?))
}

/// One run, case by case; it reloads itself while the run goes on.
pub(super) async fn show(console: InWorkspace, Path(id): Path<String>) -> Result<Response, Response> {
    let answer = console.call(Method::GET, &format!("/v1/tests/runs/{}", segment(&id)), None).await?;
    if !answer.ok() {
        let page = Page { title: "Test run".into(), nav: true, notice: answer.problem(), ..Page::default() };
        return Ok(render(answer.status, page));
    }
    let workspace = console.workspace().await?;
    let json = &answer.json;
    let run = TestRun {
        item: item(json),
        error: json["error"].as_str().map(str::to_owned),
        cases: json["report"]["cases"].as_array().map(|c| c.iter().map(case).collect()).unwrap_or_default(),
    };
    let running = run.item.status == "running";
    let mut response = render(StatusCode::OK, page("Test run", text(&workspace["name"]), None, PageBody::TestRun(run)));
    if running {
        // Reloaded by the browser itself: the page works without script.
        response.headers_mut().insert("refresh", HeaderValue::from_static("2"));
    }
    Ok(response)
}

/// The run's suite back in the editor.
pub(super) async fn edit(console: InWorkspace, Path(id): Path<String>) -> Result<Response, Response> {
    let answer = console.call(Method::GET, &format!("/v1/tests/runs/{}", segment(&id)), None).await?;
    if !answer.ok() {
        return Ok(render(answer.status, console.tests_page("", "", answer.problem()).await?));
    }
    let yaml = yaml_serde::to_string(&answer.json["document"]).unwrap_or_default();
    let model = answer.json["model"].as_str().unwrap_or_default();
    Ok(render(
        StatusCode::OK,
        console.tests_page(&yaml, model, notice("The run's suite: edit it, then run it.")).await?,
    ))
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub(super) struct CompareQuery {
    a: String,
    b: String,
}

/// Two runs side by side, case by case.
pub(super) async fn compare(console: InWorkspace, Query(query): Query<CompareQuery>) -> Result<Response, Response> {
    let mut runs = Vec::with_capacity(2);
    for id in [&query.a, &query.b] {
        let answer = console.call(Method::GET, &format!("/v1/tests/runs/{}", segment(id)), None).await?;
        if !answer.ok() {
            return Ok(render(answer.status, console.tests_page("", "", answer.problem()).await?));
        }
        runs.push(answer.json);
    }
    let cells = |run: &Value| -> Vec<(String, CaseCell)> {
        run["report"]["cases"]
            .as_array()
            .map(|cases| {
                cases
                    .iter()
                    .map(|c| {
                        let c = case(c);
                        let cell = CaseCell {
                            passed: c.passed,
                            pass_rate: c.pass_rate,
                            latency_ms: c.latency_ms,
                            tokens: c.tokens,
                        };
                        (c.name, cell)
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    let (left, right) = (cells(&runs[0]), cells(&runs[1]));
    let mut names: Vec<String> = left.iter().map(|(n, _)| n.clone()).collect();
    names.extend(right.iter().map(|(n, _)| n.clone()).filter(|n| !left.iter().any(|(l, _)| l == n)));
    let find = |cells: &[(String, CaseCell)], name: &str| cells.iter().find(|(n, _)| n == name).map(|(_, c)| c.clone());
    let rows = names.into_iter().map(|name| (name.clone(), find(&left, &name), find(&right, &name))).collect();
    let comparison = TestComparison { a: item(&runs[0]), b: item(&runs[1]), rows };
    let workspace = console.workspace().await?;
    Ok(render(StatusCode::OK, page("Two runs", text(&workspace["name"]), None, PageBody::TestComparison(comparison))))
}

/// **Save as test**: the conversation as a case, in the editor.
pub(super) async fn save_as_test(console: InWorkspace, Path(id): Path<String>) -> Result<Response, Response> {
    let answer =
        console.call(Method::GET, &format!("/v1/workspace/conversations/{}/suite", segment(&id)), None).await?;
    if !answer.ok() {
        return Ok(render(answer.status, console.tests_page("", "", answer.problem()).await?));
    }
    let yaml = text(&answer.json["yaml"]);
    let said = notice("Saved from the conversation: add what its replies must say, then run it.");
    Ok(render(StatusCode::OK, console.tests_page(&yaml, "", said).await?))
}
