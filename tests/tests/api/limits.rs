//! The turn's limits and the model's and host's failures: each ends or
//! answers cleanly, and nothing hostile reaches the user or the host.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::helpers::{Db, HostSpec, Rig, Step, of, task_tools};

#[tokio::test]
async fn the_models_mistakes_go_back_to_it_and_count_as_iterations() {
    let script = vec![
        Step::Call("no_such_tool", json!({})),
        Step::RawCall("lookup", "{not json"),
        Step::Call("create_task", json!({"title": 42})),
        Step::Text("gave up: {last_tool}"),
    ];
    let rig = Rig::start(Db::Sqlite, HostSpec::new(task_tools()), script, &[("CA_MAX_ITERATIONS", "4")]).await;

    let events = rig.say("go").await;

    assert_eq!(of(&events, "done")[0]["stop_reason"], "completed");
    assert_eq!(rig.model.requests.lock().unwrap().len(), 4);
    let told = rig.model.last_tool_messages();
    assert!(told[0].contains("unknown_tool"), "{told:?}");
    assert!(told[1].contains("invalid_arguments") && told[1].contains("not a JSON object"), "{told:?}");
    assert!(told[2].contains("invalid_arguments") && told[2].contains("/title"), "{told:?}");
    assert_eq!(rig.host.count("execute") + rig.host.count("preview"), 0, "nothing reached the host");
}

#[tokio::test]
async fn the_time_limit_ends_a_slow_turn() {
    let host = HostSpec::new(task_tools()).delay(3000);
    let rig =
        Rig::start(Db::Sqlite, host, vec![Step::Call("lookup", json!({}))], &[("CA_TURN_TIMEOUT_MS", "500")]).await;
    let started = Instant::now();
    let events = rig.say("look").await;
    assert!(started.elapsed() < Duration::from_secs(3));
    assert_eq!(of(&events, "done")[0]["stop_reason"], "time_limit");
    assert!(of(&events, "message")[0]["text"].as_str().unwrap().contains("took longer"));
}

#[tokio::test]
async fn the_token_limit_ends_the_turn() {
    let host = HostSpec::new(task_tools());
    let rig =
        Rig::start(Db::Sqlite, host, vec![Step::Call("lookup", json!({}))], &[("CA_MAX_TURN_TOKENS", "120")]).await;
    let events = rig.say("look").await;
    // 50 tokens a step: the third step crosses 120.
    assert_eq!(of(&events, "done")[0]["stop_reason"], "token_limit");
    assert_eq!(rig.host.count("execute"), 3);
}

#[tokio::test]
async fn a_slow_tool_call_times_out_as_a_tool_error() {
    let host = HostSpec::new(task_tools()).delay(2000);
    let script = vec![Step::Call("lookup", json!({})), Step::Text("{last_tool}")];
    let rig = Rig::start(Db::Sqlite, host, script, &[("CA_TOOL_TIMEOUT_MS", "200")]).await;
    let events = rig.say("look").await;
    assert_eq!(of(&events, "tool").last().unwrap()["status"], "failed");
    assert!(of(&events, "message")[0]["text"].as_str().unwrap().contains("host_timeout"));
    assert_eq!(of(&events, "done")[0]["stop_reason"], "completed");
}

#[tokio::test]
async fn every_host_error_status_is_reported_generically() {
    let secret_text = "stack trace: password=hunter2";
    for (status, body, code) in [
        (401, json!({"error": secret_text}).to_string(), "host_unauthorized"),
        (400, json!({"error": secret_text}).to_string(), "host_bad_request"),
        (403, json!({"error": secret_text}).to_string(), "host_forbidden"),
        (404, json!({"error": secret_text}).to_string(), "host_not_found"),
        (500, json!({"error": secret_text}).to_string(), "host_failed"),
        (503, format!("<html>{secret_text}</html>"), "host_failed"),
        (200, format!("not json {secret_text}"), "host_invalid_answer"),
        (200, json!({"no_output": secret_text}).to_string(), "host_invalid_answer"),
        // Redirects are not followed.
        (302, json!({"error": secret_text}).to_string(), "host_failed"),
        // Answers over the size cap are not read.
        (
            200,
            json!({"output": {"blob": "x".repeat(2 * 1024 * 1024), "note": secret_text}}).to_string(),
            "host_invalid_answer",
        ),
    ] {
        let host = HostSpec::new(task_tools()).execute_raw(status, &body);
        let script = vec![Step::Call("lookup", json!({})), Step::Text("{last_tool}")];
        let rig = Rig::start(Db::Sqlite, host, script, &[]).await;
        let events = rig.say("look").await;
        let all = serde_json::to_string(&events.iter().map(|(_, d)| d).collect::<Vec<_>>()).unwrap();
        assert!(!all.contains("hunter2"), "status {status}: the host's text reached the user");
        assert!(
            rig.model.last_tool_messages()[0].contains(code),
            "status {status}: {:?}",
            rig.model.last_tool_messages()
        );
        assert!(!rig.model.last_tool_messages()[0].contains("hunter2"));
    }
}

#[tokio::test]
async fn hostile_display_entries_are_sanitized_before_the_widget_sees_them() {
    let mut display = vec![
        json!({"title": "js", "url": "javascript:alert(1)"}),
        json!({"title": "JS", "url": "JaVaScRiPt:alert(1)"}),
        json!({"title": "ctl", "url": "java\u{0001}script:alert(1)"}),
        json!({"title": "data", "url": "data:text/html,<script>alert(1)</script>"}),
        json!({"title": "rel", "url": "/relative"}),
        json!({"title": "user", "url": "https://shop.example@evil.example/"}),
        json!({"title": "<b>bold</b>".repeat(40), "url": "https://shop.example/ok", "image": "http://shop.example/i.png",
               "badges": ["a", "b", "c", "d", "e"]}),
    ];
    for i in 0..50 {
        display.push(json!({"title": format!("n{i}"), "url": format!("https://shop.example/{i}")}));
    }
    let host = HostSpec::new(task_tools()).execute(200, json!({"output": {"display": display}}));
    let rig = Rig::start(Db::Sqlite, host, vec![Step::Call("lookup", json!({})), Step::Text("ok")], &[]).await;

    let events = rig.say("look").await;

    let cards: Vec<Value> =
        of(&events, "display").iter().flat_map(|d| d["cards"].as_array().unwrap().clone()).collect();
    assert_eq!(cards.len(), 6);
    assert_eq!(cards[0]["url"], "https://shop.example/ok");
    assert_eq!(cards[0]["title"].as_str().unwrap().chars().count(), 120);
    assert!(cards[0].get("image").is_none());
    assert_eq!(cards[0]["badges"].as_array().unwrap().len(), 4);
    assert!(cards.iter().all(|c| c["url"].as_str().unwrap().starts_with("https://shop.example/")));
}

/// A turn whose stream is open: its id, read from the first event.
struct RunningTurn {
    id: String,
    read: String,
    body: std::pin::Pin<Box<dyn futures::Stream<Item = reqwest::Result<axum::body::Bytes>> + Send>>,
}

impl RunningTurn {
    async fn start(rig: &Rig) -> Self {
        use futures::StreamExt;
        let response = rig.app.post("/v1/chat/turns", &rig.token, &json!({"message": "look"})).await;
        let mut body = Box::pin(response.bytes_stream());
        let read = String::from_utf8(body.next().await.unwrap().unwrap().to_vec()).unwrap();
        let id = crate::helpers::parse_sse(&read)[0].1["turn_id"].as_str().unwrap().to_owned();
        Self { id, read, body }
    }

    /// Reads the stream to its end; all its events.
    async fn finish(mut self) -> Vec<(String, serde_json::Value)> {
        use futures::StreamExt;
        while let Some(chunk) = self.body.next().await {
            self.read.push_str(&String::from_utf8_lossy(&chunk.unwrap()));
        }
        crate::helpers::parse_sse(&self.read)
    }
}

#[tokio::test]
async fn stop_cancels_a_running_turn() {
    let host = HostSpec::new(task_tools()).delay(5000);
    let rig = Rig::start(Db::Sqlite, host, vec![Step::Call("lookup", json!({}))], &[]).await;
    let started = Instant::now();
    let turn = RunningTurn::start(&rig).await;
    let turn_id = turn.id.clone();

    let stop = rig.app.post_empty(&format!("/v1/turns/{turn_id}/stop"), &rig.token).await;
    assert_eq!(stop.status(), 202);
    let events = turn.finish().await;
    assert_eq!(of(&events, "done")[0]["stop_reason"], "cancelled");
    assert!(started.elapsed() < Duration::from_secs(4));
    let again = rig.app.post_empty(&format!("/v1/turns/{turn_id}/stop"), &rig.token).await;
    assert_eq!(again.status(), 404);
}

/// With two replicas on one database, a stop that reaches the one not
/// running the turn still stops it.
#[tokio::test]
async fn a_stop_sent_to_another_replica_stops_the_turn() {
    let host = HostSpec::new(task_tools()).delay(5000);
    let rig = Rig::start(Db::Sqlite, host, vec![Step::Call("lookup", json!({}))], &[]).await;
    let other = crate::helpers::restart(&rig.app, &[("OPENAI_BASE_URL", rig.model.base_url())]).await;
    let started = Instant::now();
    let turn = RunningTurn::start(&rig).await;
    let turn_id = turn.id.clone();

    let stop = rig
        .app
        .client
        .post(format!("http://{other}/v1/turns/{turn_id}/stop"))
        .bearer_auth(&rig.token)
        .send()
        .await
        .unwrap();

    assert_eq!(stop.status(), 202);
    let events = turn.finish().await;
    assert_eq!(of(&events, "done")[0]["stop_reason"], "cancelled");
    assert!(started.elapsed() < Duration::from_secs(4));
    // Someone else's turn cannot be stopped.
    let stranger = crate::helpers::token(&rig.workspace, &rig.secret, "someone_else");
    let response = rig
        .app
        .client
        .post(format!("http://{other}/v1/turns/{turn_id}/stop"))
        .bearer_auth(stranger)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 404);
}

/// SIGTERM: no new connection; a turn that ends within the grace period
/// ends as usual, one still running after it is stopped — and either way
/// its end is saved before the process exits.
#[tokio::test]
async fn shutting_down_lets_turns_finish_within_the_grace_period_and_stops_the_rest() {
    let quick = HostSpec::new(task_tools()).delay(200);
    let script = vec![Step::Call("lookup", json!({})), Step::Text("done")];
    let rig = Rig::start(Db::Sqlite, quick, script, &[("CA_SHUTDOWN_GRACE_MS", "5000")]).await;
    let turn = RunningTurn::start(&rig).await;
    let (events, ()) = tokio::join!(turn.finish(), rig.app.shut_down());
    assert_eq!(of(&events, "done")[0]["stop_reason"], "completed", "inside the grace period");
    assert!(rig.app.client.get(rig.app.url("/health")).send().await.is_err(), "no new connection");

    let slow = HostSpec::new(task_tools()).delay(5000);
    let rig =
        Rig::start(Db::Sqlite, slow, vec![Step::Call("lookup", json!({}))], &[("CA_SHUTDOWN_GRACE_MS", "300")]).await;
    let started = Instant::now();
    let turn = RunningTurn::start(&rig).await;
    let turn_id = turn.id.clone();
    let (events, ()) = tokio::join!(turn.finish(), rig.app.shut_down());
    assert_eq!(of(&events, "done")[0]["stop_reason"], "cancelled", "past the grace period");
    assert!(started.elapsed() < Duration::from_secs(4), "the grace period bounds the wait");
    let (reason,): (Option<String>,) = sqlx::query_as("SELECT stop_reason FROM turns WHERE id = $1")
        .bind(&turn_id)
        .fetch_one(&rig.app.state.pool)
        .await
        .unwrap();
    assert_eq!(reason.as_deref(), Some("cancelled"), "the stopped turn's end is saved");
}

/// `CA_IDLE_CONNECTION_SECS`: a connection that sends no complete request
/// head in time is closed — one that sends nothing (slowloris), one that
/// stops halfway through its head, one kept alive after its answer — and
/// a stream that lasts longer than that is not cut.
#[tokio::test]
async fn a_connection_that_asks_for_nothing_is_closed_and_a_long_stream_is_not() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let host = HostSpec::new(task_tools()).delay(2500);
    let script = vec![Step::Call("lookup", json!({})), Step::Text("found it")];
    let rig = Rig::start(Db::Sqlite, host, script, &[("CA_IDLE_CONNECTION_SECS", "1")]).await;
    let address = rig.app.address;

    /// Writes `sent`, then reads until the server closes the connection:
    /// what it answered, and how long the connection lasted.
    async fn until_closed(address: std::net::SocketAddr, sent: &'static [u8]) -> (String, Duration) {
        let opened = Instant::now();
        let mut connection = tokio::net::TcpStream::connect(address).await.unwrap();
        connection.write_all(sent).await.unwrap();
        let mut answer = Vec::new();
        let read = tokio::time::timeout(Duration::from_secs(20), connection.read_to_end(&mut answer)).await;
        assert!(read.is_ok(), "the server closed the connection sending {:?}", String::from_utf8_lossy(sent));
        (String::from_utf8_lossy(&answer).into_owned(), opened.elapsed())
    }

    let (stream, silent, partial, kept) = tokio::join!(
        rig.say("look it up"),
        until_closed(address, b""),
        until_closed(address, b"GET /health HTTP/1.1\r\nHost: assistant\r\n"),
        until_closed(address, b"GET /health HTTP/1.1\r\nHost: assistant\r\n\r\n"),
    );
    // The turn waited 2.5 s on its tool, its stream open all along.
    assert_eq!(of(&stream, "done")[0]["stop_reason"], "completed");
    assert_eq!(of(&stream, "message")[0]["text"], "found it");
    for (what, (answer, lasted)) in [("silent", &silent), ("partial", &partial), ("kept alive", &kept)] {
        assert!(*lasted >= Duration::from_millis(1000), "{what}: closed after {lasted:?}, before its time");
        if what == "kept alive" {
            assert!(answer.starts_with("HTTP/1.1 200") && answer.ends_with("ok"), "{what}: {answer}");
        } else {
            assert!(!answer.contains(" 200 "), "{what}: nothing was asked, nothing answered: {answer}");
        }
    }
}
