//! Turns that survive the network: every event has an id, and a client
//! that lost its stream resumes it with `Last-Event-ID` on any replica,
//! without the model being asked again.

use std::time::Duration;

use serde_json::{Value, json};

use crate::helpers::{Db, HostSpec, Rig, Step, of, parse_sse, replica, restart, task_tools, token};
use crate::on_both_databases;

on_both_databases!(
    a_lost_stream_is_resumed_on_another_replica_without_asking_the_model_again,
    a_long_streams_events_are_all_stored_in_order,
    a_resumed_stream_waits_for_the_next_events_without_reading_the_database,
);

/// `GET /v1/turns/{id}/events` on `base`: the status and the whole body.
async fn resume(base: &str, token: &str, turn_id: &str, last_event_id: Option<&str>) -> (u16, String) {
    let mut request = crate::helpers::http().get(format!("{base}/v1/turns/{turn_id}/events")).bearer_auth(token);
    if let Some(id) = last_event_id {
        request = request.header("last-event-id", id);
    }
    let response = request.send().await.unwrap();
    (response.status().as_u16(), response.text().await.unwrap())
}

/// The `id:` lines of an SSE body.
fn ids(body: &str) -> Vec<u64> {
    body.lines().filter_map(|l| l.strip_prefix("id:")).map(|v| v.trim().parse().unwrap()).collect()
}

async fn a_lost_stream_is_resumed_on_another_replica_without_asking_the_model_again(db: Db) {
    let script = vec![Step::Call("lookup", json!({"q": "x"})), Step::Text("found it")];
    let rig = Rig::start(db, HostSpec::new(task_tools()).delay(1500), script, &[]).await;
    let other = format!("http://{}", restart(&rig.app, &[("OPENAI_BASE_URL", rig.model.base_url())]).await);

    // The browser reads the start of the stream, then loses the connection.
    let (body, seen) = crate::helpers::turn_until(&rig.app, &rig.token, "look it up", "event: tool").await;
    drop(body);
    let before = parse_sse(&seen);
    let turn_id = of(&before, "turn")[0]["turn_id"].as_str().unwrap().to_owned();
    let last = *ids(&seen).last().unwrap();
    assert_eq!(ids(&seen), (1..=last).collect::<Vec<_>>(), "every event has the next id");

    // It reconnects to the other replica, saying what it saw last.
    let (status, rest) = resume(&other, &rig.token, &turn_id, Some(&last.to_string())).await;

    assert_eq!(status, 200);
    let resumed = ids(&rest);
    assert_eq!(resumed.first(), Some(&(last + 1)), "exactly the events it missed: {rest}");
    assert!(resumed.windows(2).all(|w| w[1] == w[0] + 1), "{resumed:?}");
    let events = parse_sse(&rest);
    assert_eq!(of(&events, "done")[0]["stop_reason"], "completed");
    assert_eq!(of(&events, "message")[0]["text"], "found it");
    assert!(of(&events, "turn").is_empty(), "nothing it already had");
    assert_eq!(rig.model.requests.lock().unwrap().len(), 2, "one call per step, none again");

    // Later, from the start, on either replica: the whole stream again.
    let (_, whole) = resume(&rig.app.url(""), &rig.token, &turn_id, None).await;
    assert_eq!(ids(&whole), (1..=*resumed.last().unwrap()).collect::<Vec<_>>());
}

/// A stream resumed on another replica while the turn waits for a slow
/// tool sleeps until the turn's next events are stored (PostgreSQL's
/// `NOTIFY`, SQLite's data version), instead of asking the database every
/// few milliseconds; then it hears the rest at once.
async fn a_resumed_stream_waits_for_the_next_events_without_reading_the_database(db: Db) {
    const TOOL_TAKES_MS: u64 = 6_000;
    let script = vec![Step::Call("lookup", json!({"q": "x"})), Step::Text("found it")];
    let rig = Rig::start(db, HostSpec::new(task_tools()).delay(TOOL_TAKES_MS), script, &[]).await;
    let (other, replica) = replica(&rig.app, &[("OPENAI_BASE_URL", rig.model.base_url())]).await;
    let (body, seen) = crate::helpers::turn_until(&rig.app, &rig.token, "look it up", "event: tool").await;
    let asked = std::time::Instant::now();
    drop(body);
    let turn_id = of(&parse_sse(&seen), "turn")[0]["turn_id"].as_str().unwrap().to_owned();
    let last = ids(&seen).last().unwrap().to_string();
    let resumed = {
        let (token, turn_id) = (rig.token.clone(), turn_id.clone());
        tokio::spawn(async move { resume(&format!("http://{other}"), &token, &turn_id, Some(&last)).await })
    };

    // Two seconds of the tool's six: a poll every 150 ms would have read 13 times.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let looks = replica.pool.bells().looks();
    assert!(
        asked.elapsed() < Duration::from_millis(TOOL_TAKES_MS - 1_000),
        "the tool still works (the machine was too slow for this test to tell anything)"
    );
    // Its first read, and one for each batch of events the turn stored meanwhile.
    assert!((1..=4).contains(&looks), "the waiting stream read the database {looks} times");

    // Heard when stored (the turn's own deadline is minutes away).
    let (status, rest) = tokio::time::timeout(Duration::from_secs(30), resumed).await.expect("heard").unwrap();
    assert_eq!(status, 200);
    let events = parse_sse(&rest);
    assert_eq!(of(&events, "message")[0]["text"], "found it", "{rest}");
    assert_eq!(of(&events, "done")[0]["stop_reason"], "completed");
}

#[tokio::test]
async fn a_turn_whose_process_died_ends_as_interrupted_for_the_client() {
    let rig = Rig::start(Db::Sqlite, HostSpec::new(task_tools()), vec![Step::Text("hi")], &[]).await;
    let first = rig.say("hello").await;
    let conversation = of(&first, "turn")[0]["conversation_id"].as_str().unwrap().to_owned();
    let pool = &rig.app.state.pool;
    let long_ago = server::ids::now_ms() - 3_600_000;
    // Its user reads German: the client is told in German.
    sqlx::query("UPDATE conversations SET lang = 'de' WHERE id = $1").bind(&conversation).execute(pool).await.unwrap();
    sqlx::query("INSERT INTO turns (id, conversation_id, started_at) VALUES ('turn_dead', $1, $2)")
        .bind(&conversation)
        .bind(long_ago)
        .execute(pool)
        .await
        .unwrap();
    let started = json!({"turn_id": "turn_dead", "conversation_id": conversation}).to_string();
    sqlx::query(
        "INSERT INTO turn_events (turn_id, seq, kind, data, created_at) VALUES ('turn_dead', 1, 'turn', $1, $2)",
    )
    .bind(&started)
    .bind(long_ago)
    .execute(pool)
    .await
    .unwrap();

    let (status, body) = resume(&rig.app.url(""), &rig.token, "turn_dead", Some("1")).await;

    assert_eq!(status, 200);
    let events = parse_sse(&body);
    assert_eq!(of(&events, "error")[0]["code"], "turn_interrupted");
    assert_eq!(of(&events, "error")[0]["message"], widget::wire::i18n::text("de", "error_interrupted"));
    assert_eq!(of(&events, "done")[0]["stop_reason"], "interrupted");
    assert_eq!(ids(&body), [2, 3]);
}

#[tokio::test]
async fn only_the_turns_own_user_resumes_it_and_a_bad_id_is_refused() {
    let rig = Rig::start(Db::Sqlite, HostSpec::new(task_tools()), vec![Step::Text("hi")], &[]).await;
    let events = rig.say("hello").await;
    let turn_id = of(&events, "turn")[0]["turn_id"].as_str().unwrap().to_owned();
    let base = rig.app.url("");
    let stranger = token(&rig.workspace, &rig.secret, "someone_else");
    assert_eq!(resume(&base, &stranger, &turn_id, None).await.0, 404);
    assert_eq!(resume(&base, &rig.token, "turn_nope", None).await.0, 404);
    let (status, body) = resume(&base, &rig.token, &turn_id, Some("not-a-number")).await;
    assert_eq!(status, 400);
    assert_eq!(serde_json::from_str::<Value>(&body).unwrap()["code"], "bad_request");
    // Past the last event of a finished turn: nothing more, and the stream ends.
    let last = ids(&resume(&base, &rig.token, &turn_id, None).await.1).last().copied().unwrap();
    let started = std::time::Instant::now();
    let (status, after) = resume(&base, &rig.token, &turn_id, Some(&last.to_string())).await;
    assert_eq!(status, 200);
    assert!(parse_sse(&after).iter().all(|(name, _)| name != "text"), "{after}");
    assert!(started.elapsed() < Duration::from_secs(10), "the stream of a finished turn ends");
}

/// Events are stored 500 rows to a statement: a longer batch (a fast model
/// streaming many pieces) is stored whole and in order.
async fn a_long_streams_events_are_all_stored_in_order(db: Db) {
    let rig = Rig::start(db, HostSpec::new(task_tools()), vec![Step::Text("hi")], &[]).await;
    let pool = &rig.app.state.pool;
    let data: Vec<String> = (1..=1_234).map(|seq| json!({ "text": format!("piece {seq}") }).to_string()).collect();
    let rows: Vec<(u64, &str, &str)> = (1..=1_234).map(|seq| (seq, "delta", data[seq as usize - 1].as_str())).collect();

    server::db::turn_events::insert(pool, "turn_long", &rows, 1).await.unwrap();

    let stored = server::db::turn_events::after(pool, "turn_long", 0, 5_000).await.unwrap();
    assert_eq!(stored.iter().map(|e| e.seq).collect::<Vec<_>>(), (1..=1_234).collect::<Vec<i64>>());
    assert_eq!(stored[1_233].data, r#"{"text":"piece 1234"}"#);
    assert!(stored.iter().all(|e| e.kind == "delta"));
    let last = server::db::turn_events::last_kind(pool, "turn_long").await.unwrap();
    assert_eq!(last, Some((1_234, "delta".to_string())));
}
