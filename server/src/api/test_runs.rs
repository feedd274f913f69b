//! Assistant test runs (issue #46; api key): `POST /v1/tests/runs` runs a
//! suite (YAML or JSON) against the workspace — its model, prompt,
//! knowledge and tools, in test mode (`test_runner`) — on this replica,
//! in the background; `GET /v1/tests/runs/{id}` shows its progress and
//! report, `GET /v1/tests/runs/{id}/events` streams each case as it ends,
//! `GET /v1/tests/runs/{id}/junit` is its JUnit XML,
//! `GET /v1/tests/runs` lists the workspace's runs. One run at a time per
//! workspace. docs/assistant-tests.md tells hosts the rest.

use std::sync::Arc;
use std::time::Duration;

use axum::Json;
use axum::extract::{DefaultBodyLimit, Path, State};
use axum::http::StatusCode;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::setup::WorkspaceKey;
use super::state::ApiState;
use super::test_runner::{RunOptions, run_suite};
use crate::db::test_runs::{self as store, Ended, NewRun, TestRunRow};
use crate::http::{ApiError, ApiJson};
use crate::ids::{new_id, rfc3339};
use crate::suites::format::{self, Action, File};
use crate::suites::report::{CaseReport, RunReport};

/// Largest request body: a suite with the files its steps send.
const MAX_BODY_BYTES: usize = 32 * 1024 * 1024;
/// How long a run's lease lasts; it is renewed at a third of it.
const LEASE: Duration = Duration::from_secs(60);
/// Runs listed.
const LISTED: i64 = 50;
const DAY_MS: i64 = 86_400_000;

pub fn router() -> OpenApiRouter<ApiState> {
    OpenApiRouter::new()
        .merge(OpenApiRouter::new().routes(routes!(start_run)).layer(DefaultBodyLimit::max(MAX_BODY_BYTES)))
        .routes(routes!(list_runs))
        .routes(routes!(show_run))
        .routes(routes!(run_events))
        .routes(routes!(run_junit))
}

/// A run to start.
#[derive(Deserialize, utoipa::ToSchema)]
struct StartRun {
    /// The suite: an object as `context-assistant test` reads from YAML or
    /// JSON (docs/assistant-tests.md), or its YAML text. Files go as
    /// `{name, content_type, base64}` (a path is read by the command line only).
    #[schema(value_type = Object)]
    suite: Value,
    /// Another model than the workspace's, at the same endpoint (by name).
    #[serde(default)]
    #[schema(min_length = 1, max_length = 200)]
    model: Option<String>,
}

/// A run as shown.
#[derive(Serialize, utoipa::ToSchema)]
struct RunView {
    id: String,
    /// The suite's name.
    suite: String,
    /// The model named for the run (else the workspace's).
    model: Option<String>,
    /// `running`, `passed`, `failed` (a case failed) or `error` (the run
    /// could not go on; `error` says why).
    status: String,
    cases_total: i64,
    /// Cases that ended so far.
    cases_done: i64,
    passed: i64,
    failed: i64,
    /// RFC 3339.
    created_at: String,
    finished_at: Option<String>,
    error: Option<String>,
    /// The cases ended so far, then the whole run (`GET` of one run only).
    #[serde(skip_serializing_if = "Option::is_none")]
    report: Option<RunReport>,
    /// The suite as it was run (`GET` of one run only).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    document: Option<Value>,
}

impl RunView {
    fn of(row: TestRunRow) -> Self {
        let report: Option<RunReport> = row.report.as_deref().and_then(|r| serde_json::from_str(r).ok());
        Self {
            cases_done: row.passed + row.failed,
            id: row.id,
            suite: row.suite_name,
            model: row.model,
            status: row.status,
            cases_total: row.cases_total,
            passed: row.passed,
            failed: row.failed,
            created_at: rfc3339(row.created_at),
            finished_at: row.finished_at.map(rfc3339),
            document: serde_json::from_str(&row.suite).ok().filter(|d: &Value| d.is_object()),
            error: row.error,
            report,
        }
    }
}

#[derive(Serialize, utoipa::ToSchema)]
struct RunList {
    runs: Vec<RunView>,
}

/// Runs a suite against the workspace, in the background.
///
/// `400` for a suite that does not read (where and why), or that names a
/// model (`model`, `judge_model`) when the workspace has no model of its
/// own; `409 test_run_in_progress` while another run of the workspace goes
/// on; `429` past `CA_TEST_RUNS_PER_WORKSPACE_PER_DAY` runs today. The
/// run's turns use the workspace's model and tools as a visitor's would,
/// but a change is recorded as "would apply" unless its case says
/// `execute: true`, and nothing counts against the visitors' limits or
/// charts (its turns and tokens are `test_turns` and `test_tokens` in
/// `GET /v1/usage`).
#[utoipa::path(
    post,
    path = "/v1/tests/runs",
    tag = "tests",
    security(("api_key" = [])),
    request_body = StartRun,
    responses(
        (status = 202, description = "The run started; follow it at `GET /v1/tests/runs/{id}`", body = RunView),
        (status = 400, description = "The suite does not read: where and why", body = crate::http::ErrorBody),
        (status = 409, description = "Another run of the workspace goes on (`test_run_in_progress`)", body = crate::http::ErrorBody),
        (status = 429, description = "The workspace started as many runs today as it may (`Retry-After`)", body = crate::http::ErrorBody),
    ),
)]
async fn start_run(
    State(state): State<ApiState>,
    workspace: WorkspaceKey,
    ApiJson(request): ApiJson<StartRun>,
) -> Result<(StatusCode, Json<RunView>), ApiError> {
    let document = match &request.suite {
        Value::String(text) => format::document(text).map_err(|e| ApiError::BadRequest(format!("suite: {e}")))?,
        other => other.clone(),
    };
    let suite = format::from_value(&document).map_err(|e| ApiError::BadRequest(format!("suite: {e}")))?;
    let by_path =
        suite.cases.iter().flat_map(|c| &c.steps).any(
            |s| matches!(&s.action, Action::User { files, .. } if files.iter().any(|f| matches!(f, File::Path(_)))),
        );
    if by_path {
        return Err(ApiError::BadRequest(
            "suite: a file given by its path; send its content as {name, content_type, base64} (the command line \
             reads paths)"
                .into(),
        ));
    }
    let model = match request.model.as_deref().map(str::trim) {
        Some("") => return Err(ApiError::BadRequest("model must not be empty (leave it out)".into())),
        Some(m) if m.chars().count() > 200 => return Err(ApiError::BadRequest("model: at most 200 characters".into())),
        other => other.map(str::to_owned),
    };
    // Another model is asked with the workspace's own key, never the operator's.
    if (model.is_some() || suite.judge_model.is_some())
        && crate::db::workspace_model(&state.pool, &workspace.id).await?.is_none()
    {
        return Err(ApiError::BadRequest(
            "naming a model (model, judge_model) needs the workspace's own model (PUT /v1/workspace/model): the \
             server's model is the operator's"
                .into(),
        ));
    }
    let now = state.clock.now_ms();
    let per_day = state.limits.config.test_runs_per_day;
    if per_day > 0 {
        let day_start = now.div_euclid(DAY_MS) * DAY_MS;
        if store::started_since(&state.pool, &workspace.id, day_start).await? >= per_day as i64 {
            state.limits.refused(&workspace.id, "test_runs_per_day");
            let retry = Duration::from_millis((day_start + DAY_MS - now).max(1000) as u64);
            return Err(ApiError::TooManyRequests(retry));
        }
    }
    let id = new_id("run");
    let owner = new_id("replica");
    let stored = serde_json::to_string(&document).map_err(anyhow::Error::from)?;
    let started = store::start(
        &state.pool,
        NewRun {
            id: &id,
            workspace_id: &workspace.id,
            suite_name: &suite.name,
            suite: &stored,
            model: model.as_deref(),
            cases_total: suite.cases.len() as i64,
            owner: &owner,
            lease_until: now + LEASE.as_millis() as i64,
        },
        now,
    )
    .await?;
    if !started {
        return Err(ApiError::Conflict(
            "test_run_in_progress",
            "Another test run of this workspace is going on. Wait for it to end.".into(),
        ));
    }
    tracing::info!(workspace_id = %workspace.id, run_id = %id, suite = %suite.name, cases = suite.cases.len(), "test run started");
    let detail = serde_json::json!({ "run_id": id, "suite": suite.name, "model": model });
    crate::db::audit::record(&state.pool, "api-key", "test_run.started", Some(&workspace.id), None, &detail).await?;
    tokio::spawn(run_in_background(state.clone(), workspace.id.clone(), id.clone(), suite, model));
    let row = store::get(&state.pool, &workspace.id, &id).await?.ok_or(ApiError::NotFound)?;
    Ok((StatusCode::ACCEPTED, Json(RunView::of(row))))
}

/// Runs the suite, keeping its report as cases end and its lease alive.
async fn run_in_background(
    state: ApiState,
    workspace_id: String,
    run_id: String,
    suite: crate::suites::Suite,
    model: Option<String>,
) {
    let pool = state.pool.clone();
    let lease_until = || crate::ids::now_ms() + LEASE.as_millis() as i64;
    let renewing = {
        let (pool, run_id) = (pool.clone(), run_id.clone());
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(LEASE / 3).await;
                if let Err(error) = store::renew(&pool, &run_id, crate::ids::now_ms() + LEASE.as_millis() as i64).await
                {
                    tracing::warn!(error = format!("{error:#}"), "cannot renew a test run's lease");
                }
            }
        })
    };
    // Each case's report is kept as it ends (the cases so far, in order).
    let done: Arc<std::sync::Mutex<Vec<CaseReport>>> = Arc::default();
    let (sender, mut receiver) = tokio::sync::mpsc::unbounded_channel::<Vec<CaseReport>>();
    let keeper = {
        let (pool, run_id, name) = (pool.clone(), run_id.clone(), suite.name.clone());
        tokio::spawn(async move {
            while let Some(cases) = receiver.recv().await {
                let passed = cases.iter().filter(|c| c.passed).count() as i64;
                let failed = cases.len() as i64 - passed;
                let report = RunReport { suite: name.clone(), cases, ..RunReport::default() };
                let json = serde_json::to_string(&report).expect("a report serializes");
                if let Err(error) = store::progress(&pool, &run_id, &json, passed, failed, lease_until()).await {
                    tracing::warn!(error = format!("{error:#}"), "cannot keep a test run's progress");
                }
            }
        })
    };
    let options = RunOptions {
        run_id: run_id.clone(),
        model,
        on_case: Some(Arc::new(move |case: &CaseReport| {
            let mut cases = done.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            cases.push(case.clone());
            let _ = sender.send(cases.clone());
        })),
    };
    let outcome = run_suite(&state, &workspace_id, &suite, &options).await;
    drop(options);
    let _ = keeper.await;
    renewing.abort();
    let now = crate::ids::now_ms();
    let ended = match &outcome {
        Ok(report) => {
            let json = serde_json::to_string(report).expect("a report serializes");
            tracing::info!(%workspace_id, %run_id, passed = report.passed, failed = report.failed, "test run ended");
            store::finish(
                &pool,
                &run_id,
                Ended {
                    status: if report.ok() { "passed" } else { "failed" },
                    report: Some(&json),
                    passed: report.passed as i64,
                    failed: report.failed as i64,
                    error: None,
                },
                now,
            )
            .await
        }
        Err(error) => {
            tracing::error!(%workspace_id, %run_id, error = format!("{error:#}"), "test run failed");
            let why = "the run could not go on (see the server's log)";
            store::finish(
                &pool,
                &run_id,
                Ended { status: "error", report: None, passed: 0, failed: 0, error: Some(why) },
                now,
            )
            .await
        }
    };
    if let Err(error) = ended {
        tracing::error!(error = format!("{error:#}"), "cannot record the end of a test run");
    }
}

/// The workspace's latest test runs, newest first (without their reports).
#[utoipa::path(
    get,
    path = "/v1/tests/runs",
    tag = "tests",
    security(("api_key" = [])),
    responses((status = 200, description = "The latest 50 runs", body = RunList)),
)]
async fn list_runs(State(state): State<ApiState>, workspace: WorkspaceKey) -> Result<Json<RunList>, ApiError> {
    store::close_lapsed(&state.pool, &workspace.id, state.clock.now_ms()).await?;
    let rows = store::list(&state.pool, &workspace.id, LISTED).await?;
    Ok(Json(RunList { runs: rows.into_iter().map(RunView::of).collect() }))
}

/// A test run: its progress, and its report (the cases ended so far while
/// it runs).
#[utoipa::path(
    get,
    path = "/v1/tests/runs/{id}",
    tag = "tests",
    security(("api_key" = [])),
    params(("id" = String, Path, description = "The run's id")),
    responses((status = 200, description = "The run", body = RunView)),
)]
async fn show_run(
    State(state): State<ApiState>,
    workspace: WorkspaceKey,
    Path(id): Path<String>,
) -> Result<Json<RunView>, ApiError> {
    store::close_lapsed(&state.pool, &workspace.id, state.clock.now_ms()).await?;
    let row = store::get(&state.pool, &workspace.id, &id).await?.ok_or(ApiError::NotFound)?;
    Ok(Json(RunView::of(row)))
}

/// A test run's report as JUnit XML (one `<testcase>` a case, a
/// `<failure>` with the reasons for a failed one): for a CI's test report.
/// While the run goes on, the cases ended so far.
#[utoipa::path(
    get,
    path = "/v1/tests/runs/{id}/junit",
    tag = "tests",
    security(("api_key" = [])),
    params(("id" = String, Path, description = "The run's id")),
    responses((status = 200, description = "JUnit XML", content_type = "application/xml", body = String)),
)]
async fn run_junit(
    State(state): State<ApiState>,
    workspace: WorkspaceKey,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let row = store::get(&state.pool, &workspace.id, &id).await?.ok_or(ApiError::NotFound)?;
    let (name, model) = (row.suite_name.clone(), row.model.clone());
    let mut report = RunView::of(row).report.unwrap_or_default();
    report.suite = name;
    report.model = model;
    report.failed = report.cases.iter().filter(|c| !c.passed).count();
    report.passed = report.cases.len() - report.failed;
    let xml = crate::suites::report::junit(std::slice::from_ref(&report));
    Ok(([(axum::http::header::CONTENT_TYPE, "application/xml; charset=utf-8")], xml).into_response())
}

/// A test run's cases as they end, as server-sent events: `case` (a
/// case's report) for each, then `done` (the run, without its report).
#[utoipa::path(
    get,
    path = "/v1/tests/runs/{id}/events",
    tag = "tests",
    security(("api_key" = [])),
    params(("id" = String, Path, description = "The run's id")),
    responses((status = 200, description = "`case` events, then `done`", content_type = "text/event-stream", body = String)),
)]
async fn run_events(
    State(state): State<ApiState>,
    workspace: WorkspaceKey,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    store::get(&state.pool, &workspace.id, &id).await?.ok_or(ApiError::NotFound)?;
    let events = futures::stream::unfold((0usize, false), move |(sent, over)| {
        let (state, workspace_id, id) = (state.clone(), workspace.id.clone(), id.clone());
        async move {
            if over {
                return None;
            }
            loop {
                let _ = store::close_lapsed(&state.pool, &workspace_id, crate::ids::now_ms()).await;
                let row = match store::get(&state.pool, &workspace_id, &id).await {
                    Ok(Some(row)) => row,
                    _ => return None,
                };
                let finished = row.status != "running";
                let mut view = RunView::of(row);
                view.document = None;
                let cases = view.report.take().map(|r| r.cases).unwrap_or_default();
                let mut batch: Vec<Result<Event, std::convert::Infallible>> = cases
                    .iter()
                    .skip(sent)
                    .map(|case| {
                        Ok(Event::default().event("case").data(serde_json::to_string(case).expect("serializes")))
                    })
                    .collect();
                if finished {
                    batch.push(Ok(Event::default()
                        .event("done")
                        .data(serde_json::to_string(&view).expect("serializes"))));
                }
                if !batch.is_empty() {
                    return Some((futures::stream::iter(batch), (cases.len().max(sent), finished)));
                }
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
        }
    });
    let stream = futures::StreamExt::flatten(events);
    Ok(Sse::new(stream).keep_alive(KeepAlive::new().interval(Duration::from_secs(15)).text("ping")).into_response())
}
