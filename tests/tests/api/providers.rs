//! Every provider's dialect, through the real client: the recorded stream
//! shapes of `fixtures/providers/` served by a local fake, and the errors
//! real providers answer (rate limits, outages, a prompt too long, a
//! refused `stream_options`, a content filter).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use serde_json::{Value, json};

use crate::helpers::{FakeHost, HostSpec, TestApp, of, serve, spawn_app, token, workspace_with_host};

const PROVIDERS: &[&str] = &[
    "openai",
    "azure",
    "gemini",
    "ollama",
    "vllm",
    "llamacpp",
    "deepseek",
    "groq",
    "mistral",
    "openrouter",
    "litellm",
];

/// One answer of the fake model.
#[derive(Clone)]
enum Answer {
    /// A `text/event-stream` body, as is.
    Stream(String),
    /// An error status with headers and a body.
    Status(u16, Vec<(&'static str, &'static str)>, String),
    /// One `application/json` completion: a server that ignores `stream`.
    Json(Value),
}

/// A model endpoint that answers request n with answer n (the last one
/// again after the script ends) and keeps every request.
struct FakeModel {
    base_url: String,
    requests: Arc<Mutex<Vec<Value>>>,
}

impl FakeModel {
    async fn start(answers: Vec<Answer>) -> Self {
        type S = (Arc<Vec<Answer>>, Arc<Mutex<Vec<Value>>>);
        let requests: Arc<Mutex<Vec<Value>>> = Arc::default();
        let router = Router::new()
            .route(
                "/v1/chat/completions",
                post(|State((answers, requests)): State<S>, Json(body): Json<Value>| async move {
                    let n = {
                        let mut r = requests.lock().unwrap();
                        r.push(body);
                        r.len() - 1
                    };
                    let answer = answers.get(n).or(answers.last()).cloned().unwrap();
                    respond(answer)
                }),
            )
            .with_state((Arc::new(answers), requests.clone()));
        Self { base_url: format!("http://{}/v1", serve(router).await), requests }
    }

    fn request(&self, n: usize) -> Value {
        self.requests.lock().unwrap()[n].clone()
    }

    fn count(&self) -> usize {
        self.requests.lock().unwrap().len()
    }
}

fn respond(answer: Answer) -> Response {
    match answer {
        Answer::Stream(body) => ([("content-type", "text/event-stream")], body).into_response(),
        Answer::Json(completion) => {
            let pretty = serde_json::to_string_pretty(&completion).unwrap();
            ([("content-type", "application/json")], pretty).into_response()
        }
        Answer::Status(status, headers, body) => {
            let mut response = (axum::http::StatusCode::from_u16(status).unwrap(), body).into_response();
            for (name, value) in headers {
                response.headers_mut().insert(name, value.parse().unwrap());
            }
            response
        }
    }
}

fn fixture(provider: &str, kind: &str) -> String {
    let path = format!("{}/tests/api/fixtures/providers/{provider}/{kind}.sse", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn lookup_tools() -> Value {
    json!([{ "name": "lookup", "description": "Look something up", "verb": "get",
             "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}} }])
}

/// A server on `model`, a workspace connected to a fake host with `tools`,
/// and a user's token.
async fn setup(model: &FakeModel, tools: Value, env: &[(&str, &str)]) -> (TestApp, FakeHost, String) {
    let host = HostSpec::new(tools).start().await;
    let mut builder = spawn_app(crate::helpers::Db::Sqlite).env("OPENAI_BASE_URL", model.base_url.clone());
    for (k, v) in env {
        builder = builder.env(k, *v);
    }
    let app = builder.start().await;
    let (workspace, secret) = workspace_with_host(&app, &host).await;
    (app, host, token(&workspace, &secret, "user_1"))
}

#[tokio::test]
async fn every_providers_dialect_runs_two_tool_calls_and_a_whole_reply() {
    for provider in PROVIDERS {
        let model = FakeModel::start(vec![
            Answer::Stream(fixture(provider, "tools")),
            Answer::Stream(fixture(provider, "reply")),
        ])
        .await;
        let (app, host, token) = setup(&model, lookup_tools(), &[]).await;

        let events = app.turn(&token, None, "find milk and eggs").await;

        assert_eq!(of(&events, "done")[0]["stop_reason"], "completed", "{provider}: {events:?}");
        assert_eq!(of(&events, "message")[0]["text"], "Found milk and eggs.", "{provider}");
        let mut asked: Vec<String> =
            host.calls_of("execute").iter().map(|c| format!("{}={}", c["tool"], c["arguments"]["q"])).collect();
        asked.sort();
        assert_eq!(asked, [r#""lookup"="eggs""#, r#""lookup"="milk""#], "{provider}");
        let statuses: Vec<&str> = of(&events, "tool").iter().map(|t| t["status"].as_str().unwrap()).collect();
        assert_eq!(statuses.iter().filter(|s| **s == "succeeded").count(), 2, "{provider}: {statuses:?}");
        assert!(
            of(&events, "text").iter().all(|t| !t["delta"].as_str().unwrap().contains("look")),
            "{provider}: reasoning is never the answer"
        );

        // The follow-up pairs each result with its call, under distinct ids.
        let follow_up = model.request(1);
        let messages = follow_up["messages"].as_array().unwrap();
        let assistant = messages.iter().rev().find(|m| m["role"] == "assistant").unwrap();
        let ids: Vec<&str> =
            assistant["tool_calls"].as_array().unwrap().iter().map(|c| c["id"].as_str().unwrap()).collect();
        assert_eq!(ids.len(), 2, "{provider}");
        assert!(!ids[0].is_empty() && ids[0] != ids[1], "{provider}: {ids:?}");
        let answered: Vec<&str> =
            messages.iter().filter(|m| m["role"] == "tool").map(|m| m["tool_call_id"].as_str().unwrap()).collect();
        assert_eq!(answered, ids, "{provider}");
        if *provider == "gemini" {
            let first = &assistant["tool_calls"][0];
            assert_eq!(first["extra_content"]["google"]["thought_signature"], "CiQB0e2Kb-milk-signature");
            assert!(assistant["tool_calls"][1].get("extra_content").is_none());
        }
        app.shut_down().await;
    }
}

fn reply() -> Answer {
    Answer::Stream(fixture("openai", "reply"))
}

#[tokio::test]
async fn rate_limits_and_outages_before_the_first_token_are_retried() {
    let answers = vec![
        Answer::Status(429, vec![("retry-after", "0")], r#"{"error": {"code": "rate_limit_exceeded"}}"#.into()),
        Answer::Status(503, vec![], "<html>upstream down</html>".into()),
        reply(),
    ];
    let model = FakeModel::start(answers).await;
    let (app, _, token) = setup(&model, lookup_tools(), &[]).await;
    let events = app.turn(&token, None, "hello").await;
    assert_eq!(of(&events, "done")[0]["stop_reason"], "completed", "{events:?}");
    assert_eq!(of(&events, "message")[0]["text"], "Found milk and eggs.");
    assert_eq!(model.count(), 3);
}

#[tokio::test]
async fn a_model_that_stays_rate_limited_ends_the_turn_with_its_reason() {
    let busy = Answer::Status(429, vec![("retry-after", "0")], "{}".into());
    let model = FakeModel::start(vec![busy]).await;
    let (app, _, token) = setup(&model, lookup_tools(), &[]).await;
    let events = app.turn(&token, None, "hello").await;
    assert_eq!(of(&events, "done")[0]["stop_reason"], "model_unavailable");
    let error = of(&events, "error")[0];
    assert_eq!(error["code"], "model_rate_limited");
    assert!(error["message"].as_str().unwrap().contains("busy"));
    assert_eq!(model.count(), 4, "one call and three retries");
    // The user's message is kept: the conversation shows it.
    let conversation = of(&events, "turn")[0]["conversation_id"].as_str().unwrap().to_owned();
    let (_, view) = app.get_json(&format!("/v1/conversations/{conversation}"), &token).await;
    assert_eq!(view["messages"][0]["text"], "hello");
}

#[tokio::test]
async fn the_turns_error_is_told_in_the_users_language() {
    let busy = Answer::Status(429, vec![("retry-after", "0")], "{}".into());
    let model = FakeModel::start(vec![busy]).await;
    let (app, _, token) = setup(&model, lookup_tools(), &[]).await;
    let body = serde_json::json!({"message": "こんにちは", "lang": "ja"});
    let events = crate::helpers::parse_sse(&app.post("/v1/chat/turns", &token, &body).await.text().await.unwrap());
    let error = of(&events, "error")[0];
    assert_eq!(error["code"], "model_rate_limited", "the code stays the machine's");
    assert_eq!(error["message"], widget::wire::i18n::text("ja", "error_model_busy"));
    assert!(error["message"].as_str().unwrap().contains("混み合って"), "{error}");
}

#[tokio::test]
async fn a_wait_longer_than_allowed_is_not_sat_out() {
    let model = FakeModel::start(vec![Answer::Status(429, vec![("retry-after", "3600")], "{}".into())]).await;
    let (app, _, token) = setup(&model, lookup_tools(), &[]).await;
    let started = std::time::Instant::now();
    let events = app.turn(&token, None, "hello").await;
    assert_eq!(of(&events, "error")[0]["code"], "model_rate_limited");
    assert_eq!(model.count(), 1);
    assert!(started.elapsed() < Duration::from_secs(10));
}

/// A model endpoint whose every answer starts streaming and then loses
/// its connection; returns its base URL and how many requests it got.
async fn dropping_model() -> (String, Arc<Mutex<usize>>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let requests = Arc::new(Mutex::new(0));
    let counted = requests.clone();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            *counted.lock().unwrap() += 1;
            let mut buffer = vec![0u8; 64 * 1024];
            let _ = socket.read(&mut buffer).await;
            let start = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Half an ans\"}}]}\n\n";
            let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: 100000\r\n\r\n";
            let _ = socket.write_all(format!("{head}{start}").as_bytes()).await;
            let _ = socket.flush().await;
            tokio::time::sleep(Duration::from_millis(100)).await;
            // Dropped: the connection ends 99 900 bytes early.
        }
    });
    (format!("http://{address}/v1"), requests)
}

#[tokio::test]
async fn after_the_first_token_nothing_is_retried() {
    let (base_url, requests) = dropping_model().await;
    let host = HostSpec::new(lookup_tools()).start().await;
    let app = spawn_app(crate::helpers::Db::Sqlite).env("OPENAI_BASE_URL", base_url).start().await;
    let (workspace, secret) = workspace_with_host(&app, &host).await;
    let events = app.turn(&token(&workspace, &secret, "u"), None, "hello").await;
    assert_eq!(of(&events, "done")[0]["stop_reason"], "error", "{events:?}");
    assert_eq!(of(&events, "error")[0]["code"], "model_failed");
    assert_eq!(of(&events, "text")[0]["delta"], "Half an ans", "what arrived was shown");
    assert_eq!(*requests.lock().unwrap(), 1, "a half-streamed answer is not paid for twice");
}

#[tokio::test]
async fn a_server_that_ignores_stream_is_read_from_its_whole_completions() {
    let call = |id: &str, q: &str| json!({"id": id, "type": "function", "function": {"name": "lookup", "arguments": json!({"q": q}).to_string()}});
    let calls = json!({"id": "c1", "object": "chat.completion", "choices": [{"index": 0, "finish_reason": "tool_calls",
        "message": {"role": "assistant", "content": null, "tool_calls": [call("a", "milk"), call("b", "eggs")]}}],
        "usage": {"prompt_tokens": 40, "completion_tokens": 12}});
    let reply = json!({"id": "c2", "object": "chat.completion", "choices": [{"index": 0, "finish_reason": "stop",
        "message": {"role": "assistant", "content": "Found milk and eggs."}}]});
    let model = FakeModel::start(vec![Answer::Json(calls), Answer::Json(reply)]).await;
    let (app, host, token) = setup(&model, lookup_tools(), &[]).await;

    let events = app.turn(&token, None, "find milk and eggs").await;

    assert_eq!(of(&events, "done")[0]["stop_reason"], "completed", "{events:?}");
    assert_eq!(of(&events, "message")[0]["text"], "Found milk and eggs.");
    assert_eq!(host.calls_of("execute").len(), 2);
    assert_eq!(model.request(0)["stream"], true, "it was asked to stream");
}

#[tokio::test]
async fn keep_alives_of_every_kind_are_skipped() {
    let chunk = json!({"choices": [{"index": 0, "delta": {"content": "Still here."}, "finish_reason": "stop"}]});
    let body =
        format!(": ping\n\ndata:\n\ndata: \n\nevent: keepalive\ndata: {{}}\n\ndata: {chunk}\n\ndata: [DONE]\n\n");
    let model = FakeModel::start(vec![Answer::Stream(body)]).await;
    let (app, _, token) = setup(&model, lookup_tools(), &[]).await;
    let events = app.turn(&token, None, "hello").await;
    assert_eq!(of(&events, "done")[0]["stop_reason"], "completed", "{events:?}");
    assert_eq!(of(&events, "message")[0]["text"], "Still here.");
}

#[tokio::test]
async fn a_stream_longer_than_a_step_may_be_is_cut_off() {
    let chunk = json!({"choices": [{"index": 0, "delta": {"content": "Endless"}}]});
    // 17 MiB of comments after one piece of text: over the 16 MiB a step may read.
    let padding = format!(": {}\n", "x".repeat(1021)).repeat(17 * 1024);
    let model = FakeModel::start(vec![Answer::Stream(format!("data: {chunk}\n\n{padding}"))]).await;
    let (app, _, token) = setup(&model, lookup_tools(), &[]).await;
    let events = app.turn(&token, None, "hello").await;
    assert_eq!(of(&events, "done")[0]["stop_reason"], "error", "{:?}", of(&events, "done"));
    assert_eq!(of(&events, "error")[0]["code"], "model_failed");
    assert_eq!(of(&events, "text")[0]["delta"], "Endless", "what arrived was shown");
    assert_eq!(model.count(), 1, "not retried after the first token");
}

#[tokio::test]
async fn a_prompt_too_long_is_cut_to_its_latest_turns_once() {
    let too_long = || {
        Answer::Status(
            400,
            vec![],
            json!({"error": {"message": "This model's maximum context length is 8192 tokens.", "type": "invalid_request_error", "code": "context_length_exceeded"}}).to_string(),
        )
    };
    let model = FakeModel::start(vec![reply(), reply(), too_long(), reply(), too_long()]).await;
    let (app, _, token) = setup(&model, lookup_tools(), &[]).await;
    let first = app.turn(&token, None, "first question").await;
    let conversation = of(&first, "turn")[0]["conversation_id"].as_str().unwrap().to_owned();
    app.turn(&token, Some(&conversation), "second question").await;

    let third = app.turn(&token, Some(&conversation), "third question").await;

    assert_eq!(of(&third, "done")[0]["stop_reason"], "completed", "{third:?}");
    let users = |request: &Value| -> Vec<String> {
        request["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["role"] == "user")
            .map(|m| m["content"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(users(&model.request(2)), ["first question", "second question", "third question"]);
    assert_eq!(users(&model.request(3)), ["second question", "third question"], "the oldest turn went first");

    // A conversation with no earlier turn to drop: the user is told.
    let alone = app.turn(&token, None, "a huge first question").await;
    assert_eq!(of(&alone, "error")[0]["code"], "model_context_length");
}

#[tokio::test]
async fn a_server_that_refuses_stream_options_is_asked_without_them() {
    let refusal =
        json!({"object": "error", "message": "Unrecognized request argument supplied: stream_options", "code": 400});
    let model = FakeModel::start(vec![Answer::Status(400, vec![], refusal.to_string()), reply()]).await;
    let (app, _, token) = setup(&model, lookup_tools(), &[]).await;
    let events = app.turn(&token, None, "hello").await;
    assert_eq!(of(&events, "done")[0]["stop_reason"], "completed");
    assert!(model.request(0).get("stream_options").is_some());
    assert!(model.request(1).get("stream_options").is_none());
    app.turn(&token, None, "again").await;
    assert!(model.request(2).get("stream_options").is_none(), "remembered");
}

#[tokio::test]
async fn a_content_filter_is_shown_as_such() {
    let filtered = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Here is\"}}]}\n\n\
                    data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"content_filter\"}]}\n\n\
                    data: [DONE]\n\n";
    let model = FakeModel::start(vec![Answer::Stream(filtered.into())]).await;
    let (app, _, token) = setup(&model, lookup_tools(), &[]).await;
    let events = app.turn(&token, None, "hello").await;
    assert_eq!(of(&events, "done")[0]["stop_reason"], "content_filter");
    let text = of(&events, "message")[0]["text"].as_str().unwrap();
    assert!(text.starts_with("Here is") && text.contains("content filter"), "{text}");
}

#[tokio::test]
async fn tool_schemas_and_names_a_provider_refuses_are_fixed_and_mapped_back() {
    let tools = json!([
        { "name": "3d-view", "description": "Show in 3D", "verb": "get", "inputSchema": {} },
        { "name": "lookup", "description": "Look up", "verb": "get", "inputSchema": null },
    ]);
    let call = "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c1\",\"type\":\"function\",\"function\":{\"name\":\"_3d-view\",\"arguments\":\"{}\"}}]}}]}\n\ndata: [DONE]\n\n";
    let model = FakeModel::start(vec![Answer::Stream(call.into()), reply()]).await;
    let (app, host, token) = setup(&model, tools, &[]).await;
    let events = app.turn(&token, None, "show it").await;
    assert_eq!(of(&events, "done")[0]["stop_reason"], "completed", "{events:?}");

    let sent = model.request(0);
    let functions: Vec<&Value> = sent["tools"].as_array().unwrap().iter().map(|t| &t["function"]).collect();
    assert_eq!(functions[0]["name"], "_3d-view");
    for function in &functions {
        assert_eq!(function["parameters"]["type"], "object", "{function}");
        assert!(function["parameters"]["properties"].is_object(), "{function}");
    }
    assert_eq!(host.calls_of("execute")[0]["tool"], "3d-view", "the host hears its own name");
    assert_eq!(of(&events, "tool")[0]["name"], "3d-view");
}

#[tokio::test]
async fn more_tools_than_a_provider_accepts_are_refused_at_connect() {
    let tools: Vec<Value> = (0..129)
        .map(|i| json!({"name": format!("tool_{i}"), "description": "", "verb": "get", "inputSchema": {"type": "object"}}))
        .collect();
    let host = HostSpec::new(Value::Array(tools)).start().await;
    let app = spawn_app(crate::helpers::Db::Sqlite).start().await;
    let (_, created) = app.post_json("/v1/workspaces", crate::helpers::ADMIN_TOKEN, &json!({"name": "Many"})).await;
    let key = created["api_key"].as_str().unwrap();
    let connect = json!({"base_url": host.base_url(), "secret": crate::helpers::HOST_SECRET});
    let (status, body) = app.post_json("/v1/integrations/generic-rest/connect", key, &connect).await;
    assert_eq!(status, 400, "{body}");
    assert!(body["error"].as_str().unwrap().contains("128"), "{body}");
    let fewer = json!({"base_url": host.base_url(), "secret": crate::helpers::HOST_SECRET,
                       "allowed_tools": ["tool_1", "tool_2"]});
    let (status, _) = app.post_json("/v1/integrations/generic-rest/connect", key, &fewer).await;
    assert_eq!(status, 200, "an allowlist under the limit connects");
}

/// A stream that answers `text`.
fn says(text: &str) -> Answer {
    let chunk = json!({"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": "stop"}]});
    Answer::Stream(format!("data: {chunk}\n\ndata: [DONE]\n\n"))
}

#[tokio::test]
async fn a_workspace_brings_its_own_model() {
    let server_model = FakeModel::start(vec![says("the server's model")]).await;
    let own = FakeModel::start(vec![says("OK"), says("the workspace's model")]).await;
    let app = spawn_app(crate::helpers::Db::Sqlite)
        .env("OPENAI_BASE_URL", server_model.base_url.clone())
        .env("CA_ALLOW_PRIVATE_MODEL_HOSTS", "1")
        .start()
        .await;
    let (_, created) = app.post_json("/v1/workspaces", crate::helpers::ADMIN_TOKEN, &json!({"name": "Own"})).await;
    let (key, workspace) = (created["api_key"].as_str().unwrap(), created["id"].as_str().unwrap());
    let user = token(workspace, created["embed_secret"].as_str().unwrap(), "u");
    let own_key = "sk-own-model-key-that-must-never-be-shown";

    let set = json!({"base_url": own.base_url, "api_key": own_key, "model": "own-model"});
    let (status, shown) = app.put_json("/v1/workspace/model", key, &set).await;
    assert_eq!(status, 200, "{shown}");
    assert_eq!((shown["base_url"].as_str(), shown["model"].as_str()), (Some(own.base_url.as_str()), Some("own-model")));
    assert_eq!(own.count(), 1, "checked with one request");
    assert_eq!(own.request(0)["model"], "own-model");
    let (status, read) = app.get_json("/v1/workspace/model", key).await;
    assert_eq!((status, read["model"].as_str()), (200, Some("own-model")));
    assert!(!read.to_string().contains(own_key) && !shown.to_string().contains(own_key), "the key is never shown");
    let (sealed,): (String,) = sqlx::query_as("SELECT api_key_enc FROM workspace_models WHERE workspace_id = $1")
        .bind(workspace)
        .fetch_one(&app.state.pool)
        .await
        .unwrap();
    assert!(!sealed.contains(own_key), "sealed at rest");

    let events = app.turn(&user, None, "hello").await;
    assert_eq!(of(&events, "message")[0]["text"], "the workspace's model");
    assert_eq!((own.count(), server_model.count()), (2, 0));

    let deleted = app.client.delete(app.url("/v1/workspace/model")).bearer_auth(key).send().await.unwrap();
    assert_eq!(deleted.status(), 204);
    let events = app.turn(&user, None, "hello").await;
    assert_eq!(of(&events, "message")[0]["text"], "the server's model");
    assert_eq!(app.get_json("/v1/workspace/model", key).await.0, 404);
}

#[tokio::test]
async fn a_model_that_fails_its_check_or_sits_on_a_private_address_is_not_saved() {
    let refusing =
        FakeModel::start(vec![Answer::Status(401, vec![], r#"{"error": {"message": "bad key"}}"#.into())]).await;
    let allowed = spawn_app(crate::helpers::Db::Sqlite).env("CA_ALLOW_PRIVATE_MODEL_HOSTS", "1").start().await;
    let (_, created) = allowed.post_json("/v1/workspaces", crate::helpers::ADMIN_TOKEN, &json!({"name": "W"})).await;
    let key = created["api_key"].as_str().unwrap();
    let set = json!({"base_url": refusing.base_url, "api_key": "sk-wrong", "model": "m"});
    let (status, body) = allowed.put_json("/v1/workspace/model", key, &set).await;
    assert_eq!((status, body["code"].as_str()), (502, Some("model_check_failed")), "{body}");
    assert!(body["error"].as_str().unwrap().contains("401"), "{body}");
    assert_eq!(allowed.get_json("/v1/workspace/model", key).await.0, 404, "nothing saved");

    let strict = spawn_app(crate::helpers::Db::Sqlite).start().await;
    let (_, created) = strict.post_json("/v1/workspaces", crate::helpers::ADMIN_TOKEN, &json!({"name": "W"})).await;
    let key = created["api_key"].as_str().unwrap();
    let (status, body) = strict.put_json("/v1/workspace/model", key, &set).await;
    assert_eq!(status, 400, "{body}");
    assert!(body["error"].as_str().unwrap().contains("CA_ALLOW_PRIVATE_MODEL_HOSTS"), "{body}");
    assert_eq!(refusing.count(), 1, "the private address was never called");
}

#[tokio::test]
async fn a_tool_calls_provider_fields_survive_the_database_into_the_next_turn() {
    let answers = vec![
        Answer::Stream(fixture("gemini", "tools")),
        Answer::Stream(fixture("gemini", "reply")),
        Answer::Stream(fixture("gemini", "reply")),
    ];
    let model = FakeModel::start(answers).await;
    let (app, _, token) = setup(&model, lookup_tools(), &[]).await;
    let first = app.turn(&token, None, "find milk and eggs").await;
    let conversation = of(&first, "turn")[0]["conversation_id"].as_str().unwrap().to_owned();

    // The next turn's transcript is read back from the database.
    let next = app.turn(&token, Some(&conversation), "thanks").await;

    assert_eq!(of(&next, "done")[0]["stop_reason"], "completed");
    let request = model.request(2);
    let assistant = request["messages"].as_array().unwrap().iter().find(|m| m["role"] == "assistant").unwrap();
    let calls = assistant["tool_calls"].as_array().unwrap();
    assert_eq!(calls[0]["extra_content"]["google"]["thought_signature"], "CiQB0e2Kb-milk-signature");
    assert_eq!(calls[0]["id"], "function-call-1", "the provider's own id, kept");
    assert!(calls[1].get("extra_content").is_none());
}

#[tokio::test]
async fn earlier_turns_beyond_the_history_budget_are_not_sent() {
    let model = FakeModel::start(vec![reply()]).await;
    let (app, _, token) = setup(&model, lookup_tools(), &[("CA_MAX_HISTORY_TOKENS", "10")]).await;
    let first = app.turn(&token, None, &format!("a long first question {}", "x".repeat(200))).await;
    let conversation = of(&first, "turn")[0]["conversation_id"].as_str().unwrap().to_owned();
    app.turn(&token, Some(&conversation), "short").await;
    let sent: Vec<String> = model.request(1)["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] != "system")
        .map(|m| m["content"].as_str().unwrap_or("").to_owned())
        .collect();
    assert_eq!(sent, ["short"], "the first turn is over the budget; the current one always goes");
}
