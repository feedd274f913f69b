//! The host checker: the demo bistro passes every rule; a tool server that
//! breaks one rule fails (or, where a rule only advises, warns) exactly
//! there; nothing but `get` tools is ever executed; the API and the
//! command answer the same report.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use axum::routing::{get, post};
use serde_json::{Value, json};
use server::checker::{Report, Status};
use server::host::{HostClient, HostTarget};

use crate::helpers::{Db, HostSpec, Rig, Step, serve, spawn_app, task_tools};
use crate::on_both_databases;

on_both_databases!(the_api_checks_a_host_and_connect_answers_the_report);

const SECRET: &str = "checker-host-secret";

/// One way a tool server breaks the contract.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Break {
    Nothing,
    AnySecret,
    ToolsNotAList,
    BadName,
    BadVerb,
    NoDescription,
    BadSchema,
    HugeSchema,
    TooManyTools,
    BigContext,
    ContextNotObject,
    GetFails,
    PreviewWithoutText,
    UnknownToolSucceeds,
    DroppedCard,
    BadComponent,
    Redirect,
    Slow,
}

#[derive(Default)]
struct Calls {
    executed: Vec<String>,
}

type Host = (Break, Arc<Mutex<Calls>>);

fn tools(broken: Break) -> Value {
    let mut tools = json!([
        { "name": "search", "description": "Search the catalogue", "verb": "get",
          "inputSchema": {"type": "object", "properties": {"q": {"type": "string", "minLength": 2}}, "required": ["q"]} },
        { "name": "add_item", "description": "Add an item", "verb": "create",
          "inputSchema": {"type": "object", "properties": {"title": {"type": "string"}}, "required": ["title"]} },
        { "name": "remove_item", "description": "Remove an item", "verb": "delete",
          "inputSchema": {"type": "object", "properties": {"id": {"type": "integer", "minimum": 1}}, "required": ["id"]} },
    ]);
    match broken {
        Break::BadName => tools[0]["name"] = json!("search the catalogue"),
        Break::BadVerb => tools[1]["verb"] = json!("post"),
        Break::NoDescription => tools[1]["description"] = json!(""),
        Break::BadSchema => tools[2]["inputSchema"] = json!({"type": "object", "properties": {"id": {"type": 12}}}),
        Break::TooManyTools => {
            for i in 0..130 {
                tools.as_array_mut().unwrap().push(json!({ "name": format!("report_{i}"), "description": "A report",
                    "verb": "create", "inputSchema": {"type": "object"} }));
            }
        }
        Break::HugeSchema => {
            let mut deep = json!({"type": "string"});
            for _ in 0..40 {
                deep = json!({"type": "object", "properties": {"x": deep}});
            }
            tools[1]["inputSchema"] = deep;
        }
        _ => {}
    }
    tools
}

async fn start_host(broken: Break) -> (String, Arc<Mutex<Calls>>) {
    let calls: Arc<Mutex<Calls>> = Arc::default();
    let authorized = |headers: &HeaderMap, broken: Break| {
        broken == Break::AnySecret || headers.get("authorization").is_some_and(|v| v == &format!("Bearer {SECRET}")[..])
    };
    let refused = || (StatusCode::UNAUTHORIZED, Json(json!({"error": "bad secret"}))).into_response();
    let router = axum::Router::new()
        .route(
            "/api/tools",
            get(move |State((broken, _)): State<Host>, headers: HeaderMap| async move {
                if !authorized(&headers, broken) {
                    return refused();
                }
                if broken == Break::Redirect {
                    return (StatusCode::FOUND, [("location", "https://elsewhere.example/api/tools")]).into_response();
                }
                if broken == Break::ToolsNotAList {
                    return Json(json!({"tools": "search"})).into_response();
                }
                Json(json!({ "tools": tools(broken) })).into_response()
            }),
        )
        .route(
            "/api/context",
            get(move |State((broken, _)): State<Host>, headers: HeaderMap| async move {
                if !authorized(&headers, broken) {
                    return refused();
                }
                if broken == Break::ContextNotObject {
                    return Json(json!(["not", "an", "object"])).into_response();
                }
                if broken == Break::BigContext {
                    return Json(json!({"page": "x".repeat(600 * 1024)})).into_response();
                }
                Json(json!({"page": "catalogue"})).into_response()
            }),
        )
        .route(
            "/api/tools/preview",
            post(move |State((broken, _)): State<Host>, headers: HeaderMap, Json(body): Json<Value>| async move {
                if !authorized(&headers, broken) {
                    return refused();
                }
                let tool = body["tool"].as_str().unwrap_or("");
                if !["add_item", "remove_item"].contains(&tool) {
                    if broken == Break::UnknownToolSucceeds {
                        return Json(json!({"preview": "sure"})).into_response();
                    }
                    return (StatusCode::NOT_FOUND, Json(json!({"error": "unknown tool"}))).into_response();
                }
                if broken == Break::PreviewWithoutText {
                    return Json(json!({"preview": ""})).into_response();
                }
                Json(json!({ "preview": format!("{tool} with {}", body["arguments"]) })).into_response()
            }),
        )
        .route(
            "/api/tools/execute",
            post(move |State((broken, calls)): State<Host>, headers: HeaderMap, Json(body): Json<Value>| async move {
                if !authorized(&headers, broken) {
                    return refused();
                }
                let tool = body["tool"].as_str().unwrap_or("").to_owned();
                calls.lock().unwrap().executed.push(tool.clone());
                if broken == Break::Slow {
                    tokio::time::sleep(Duration::from_millis(700)).await;
                }
                if broken == Break::GetFails {
                    return (StatusCode::INTERNAL_SERVER_ERROR, "boom").into_response();
                }
                if body["arguments"]["q"].as_str().is_none_or(|q| q.len() < 2) {
                    return (StatusCode::BAD_REQUEST, Json(json!({"error": "q is required"}))).into_response();
                }
                let mut output = json!({"results": [{"id": 1, "name": "Lamp"}], "display": [
                    {"title": "Lamp", "url": "https://shop.example/lamp", "image": "https://shop.example/lamp.jpg"}]});
                if broken == Break::DroppedCard {
                    output["display"] = json!([{"title": "Lamp", "url": "javascript:alert(1)"},
                        {"title": "Desk", "url": "https://shop.example/desk", "image": "http://shop.example/desk.jpg"}]);
                }
                if broken == Break::BadComponent {
                    output["component"] = json!({"kind": "Menu Cart!", "data": {}});
                }
                Json(json!({ "output": output })).into_response()
            }),
        )
        .with_state((broken, calls.clone()));
    (format!("http://{}/api", serve(router).await), calls)
}

fn client(timeout_ms: u64) -> HostClient {
    HostClient::new(Duration::from_millis(timeout_ms), true)
}

fn target(base_url: &str, secret: &str) -> HostTarget {
    HostTarget {
        base_url: base_url.parse().unwrap(),
        secret: server::secret::Secret::new(secret.to_owned()),
        trusted: false,
    }
}

fn statuses(report: &Report) -> Vec<(&'static str, Status)> {
    report.rules.iter().map(|r| (r.id, r.status)).collect()
}

fn detail<'a>(report: &'a Report, id: &str) -> &'a str {
    &report.rules.iter().find(|r| r.id == id).unwrap().detail
}

#[tokio::test]
async fn a_well_behaved_host_passes_and_only_its_get_tools_are_executed() {
    let (base, calls) = start_host(Break::Nothing).await;

    let report = server::checker::check(&client(1000), &target(&base, SECRET)).await;

    let not_passed: Vec<_> = statuses(&report).into_iter().filter(|(_, s)| *s != Status::Pass).collect();
    assert_eq!(not_passed, [("transport.tls", Status::Warn)], "{}", report.text());
    assert!(!report.failed());
    assert_eq!(calls.lock().unwrap().executed, ["search"], "a create or delete is previewed, never executed");
    assert!(detail(&report, "preview.calls").contains(r#"remove_item with {"id":1}"#), "{}", report.text());
    assert!(detail(&report, "get.calls").contains("`search`"));
}

#[tokio::test]
async fn each_rule_fails_on_a_host_that_breaks_it() {
    let cases = [
        (Break::AnySecret, "auth.wrong_secret", Status::Fail),
        (Break::AnySecret, "auth.no_secret", Status::Fail),
        (Break::ToolsNotAList, "tools.answer", Status::Fail),
        (Break::BadName, "tools.names", Status::Fail),
        (Break::BadVerb, "tools.verbs", Status::Fail),
        (Break::NoDescription, "tools.descriptions", Status::Warn),
        (Break::BadSchema, "tools.schemas", Status::Fail),
        (Break::HugeSchema, "tools.schemas", Status::Fail),
        (Break::TooManyTools, "tools.count", Status::Fail),
        (Break::BigContext, "answers.size", Status::Warn),
        (Break::BigContext, "context.answer", Status::Warn),
        (Break::ContextNotObject, "context.answer", Status::Fail),
        (Break::GetFails, "get.calls", Status::Fail),
        (Break::PreviewWithoutText, "preview.calls", Status::Fail),
        (Break::UnknownToolSucceeds, "errors.shape", Status::Fail),
        (Break::DroppedCard, "display.cards", Status::Warn),
        (Break::BadComponent, "display.cards", Status::Warn),
        (Break::Redirect, "transport.redirects", Status::Fail),
        (Break::Redirect, "tools.answer", Status::Fail),
        (Break::Slow, "answers.time", Status::Warn),
    ];
    for (broken, rule, expected) in cases {
        let (base, calls) = start_host(broken).await;
        let report = server::checker::check(&client(1000), &target(&base, SECRET)).await;
        assert_eq!(report.status_of(rule), Some(expected), "{broken:?} → {rule}:\n{}", report.text());
        let others_failing: Vec<_> = statuses(&report)
            .into_iter()
            .filter(|(id, s)| *s == Status::Fail && !cases.iter().any(|(b, r, _)| *b == broken && r == id))
            .collect();
        assert!(others_failing.is_empty(), "{broken:?} fails only its own rule: {others_failing:?}\n{}", report.text());
        assert!(calls.lock().unwrap().executed.iter().all(|t| t == "search"), "only get tools run");
    }
    let (base, _) = start_host(Break::DroppedCard).await;
    let report = server::checker::check(&client(1000), &target(&base, SECRET)).await;
    let cards = detail(&report, "display.cards");
    assert!(cards.contains("display[0] dropped") && cards.contains("display[1]: `image` cleared"), "{cards}");
}

#[tokio::test]
async fn a_wrong_secret_and_an_unreachable_host_are_reported_with_the_evidence() {
    let (base, _) = start_host(Break::Nothing).await;
    let report = server::checker::check(&client(1000), &target(&base, "not the secret")).await;
    assert_eq!(report.status_of("tools.answer"), Some(Status::Fail));
    assert!(detail(&report, "tools.answer").contains("401") && detail(&report, "tools.answer").contains("bad secret"));

    let report = server::checker::check(&client(500), &target("http://127.0.0.1:9/api", SECRET)).await;
    assert!(report.failed());
    assert!(detail(&report, "tools.answer").contains("could not be reached"), "{}", report.text());
}

#[tokio::test]
async fn the_demo_bistro_passes_every_rule() {
    let app = spawn_app(Db::Sqlite).start().await;
    let base = app.url("/bistro/api");

    let report = server::checker::check(&client(5000), &target(&base, app.state.bistro.secret.expose())).await;

    let not_passed: Vec<_> = statuses(&report).into_iter().filter(|(_, s)| *s != Status::Pass).collect();
    assert_eq!(not_passed, [("transport.tls", Status::Warn)], "{}", report.text());
}

async fn the_api_checks_a_host_and_connect_answers_the_report(db: Db) {
    let rig = Rig::start(db, HostSpec::new(task_tools()), vec![Step::Text("hi")], &[]).await;
    let (base, calls) = start_host(Break::BadVerb).await;

    let (status, report) = rig
        .app
        .post_json("/v1/integrations/generic-rest/check", &rig.api_key, &json!({"base_url": base, "secret": SECRET}))
        .await;

    assert_eq!(status, 200, "{report}");
    let verbs = report["rules"].as_array().unwrap().iter().find(|r| r["id"] == "tools.verbs").unwrap();
    assert_eq!(verbs["status"], "fail");
    assert!(verbs["detail"].as_str().unwrap().contains("`add_item`: verb \"post\""));
    assert!(!report.to_string().contains(SECRET), "the secret is never echoed");
    assert_eq!(calls.lock().unwrap().executed, ["search"]);
    let (_, connected) = rig
        .app
        .post_json("/v1/integrations/generic-rest/connect", &rig.api_key, &json!({"base_url": base, "secret": SECRET}))
        .await;
    assert_eq!(connected["tools"], json!(["search", "remove_item"]), "the malformed tool is skipped");
    assert!(
        connected["report"]["rules"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["id"] == "tools.verbs" && r["status"] == "fail")
    );
    for bad in [
        json!({"base_url": "ftp://x", "secret": "s"}),
        json!({"base_url": base, "secret": ""}),
        json!({"base_url": base}),
    ] {
        let (status, _) = rig.app.post_json("/v1/integrations/generic-rest/check", &rig.api_key, &bad).await;
        assert_eq!(status, 400, "{bad}");
    }
    let (status, _) = rig
        .app
        .post_json("/v1/integrations/other/check", &rig.api_key, &json!({"base_url": base, "secret": SECRET}))
        .await;
    assert_eq!(status, 404);
}

#[tokio::test]
async fn without_private_hosts_allowed_a_loopback_host_is_refused_before_any_call() {
    let app = spawn_app(Db::Sqlite).env("CA_ALLOW_PRIVATE_TOOL_HOSTS", "0").start().await;
    let (_, created) = app.post_json("/v1/workspaces", crate::helpers::ADMIN_TOKEN, &json!({"name": "Shop"})).await;
    let (base, calls) = start_host(Break::Nothing).await;
    let (status, answer) = app
        .post_json(
            "/v1/integrations/generic-rest/check",
            created["api_key"].as_str().unwrap(),
            &json!({"base_url": base, "secret": SECRET}),
        )
        .await;
    assert_eq!(status, 400, "{answer}");
    assert!(calls.lock().unwrap().executed.is_empty());
}

/// The command: the report as text, exit status 1 when a rule fails, 0
/// otherwise; the secret from the environment or standard input, never an argument.
#[tokio::test]
async fn the_command_prints_the_report_and_exits_by_it() {
    let binary = crate::helpers::built_server_program();
    let run = |base: String, secret: Option<&'static str>, stdin: &'static str| {
        let binary = binary.clone();
        tokio::task::spawn_blocking(move || {
            use std::io::Write;
            let mut command = std::process::Command::new(binary);
            command.args(["check-host", &base]).env_remove("CA_HOST_SECRET").env("CA_TOOL_TIMEOUT_MS", "2000");
            if let Some(secret) = secret {
                command.env("CA_HOST_SECRET", secret);
            }
            let mut child = command
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap();
            child.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
            let out = child.wait_with_output().unwrap();
            (out.status.code(), String::from_utf8_lossy(&out.stdout).into_owned())
        })
    };
    let (good, _) = start_host(Break::Nothing).await;
    let (code, text) = run(good.clone(), Some(SECRET), "").await.unwrap();
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("PASS  tools.names") && text.contains("0 failed"), "{text}");
    let (code, text) = run(good, None, "checker-host-secret\n").await.unwrap();
    assert_eq!(code, Some(0), "the secret from standard input: {text}");
    let (broken, _) = start_host(Break::AnySecret).await;
    let (code, text) = run(broken, Some(SECRET), "").await.unwrap();
    assert_eq!(code, Some(1), "{text}");
    assert!(text.contains("FAIL  auth.wrong_secret"), "{text}");
}
