//! Idempotent sends (issue #34): `POST /v1/chat/turns` with an
//! `Idempotency-Key` answers a retry with the turn the key already
//! started — one turn, one model call — on any replica, for a day.

use std::time::Duration;

use serde_json::{Value, json};

use crate::helpers::{Db, HostSpec, Rig, Step, parse_sse, restart, task_tools};
use crate::on_both_databases;

on_both_databases!(
    the_same_key_twice_is_one_turn_and_one_model_call_streamed_to_both,
    the_same_key_with_another_message_is_refused_and_a_bad_key_too,
    a_key_reused_after_a_day_is_a_new_turn,
    the_same_key_sent_to_two_replicas_at_once_is_one_turn,
);

/// A send with `key` to the assistant at `base`: its status, its whole
/// body and whether it was answered as a replay.
async fn send(base: &str, token: &str, key: &str, body: &Value) -> (u16, String, bool) {
    let response = crate::helpers::http()
        .post(format!("{base}/v1/chat/turns"))
        .bearer_auth(token)
        .header("idempotency-key", key)
        .json(body)
        .send()
        .await
        .unwrap();
    let replayed = response.headers().get("idempotent-replayed").is_some_and(|v| v == "true");
    (response.status().as_u16(), response.text().await.unwrap(), replayed)
}

async fn rig(db: Db) -> (Rig, String) {
    let script = vec![Step::Text("Hello, I can help."); 3];
    let rig = Rig::start(db, HostSpec::new(task_tools()), script, &[]).await;
    let base = rig.app.url("").trim_end_matches('/').to_owned();
    (rig, base)
}

async fn the_same_key_twice_is_one_turn_and_one_model_call_streamed_to_both(db: Db) {
    let (rig, base) = rig(db).await;
    let body = json!({"message": "hello"});
    let (status, first, replayed) = send(&base, &rig.token, "msg-1b7e", &body).await;
    assert_eq!((status, replayed), (200, false), "{first}");
    // The answer was lost: the widget sends again with the same key.
    let (status, again, replayed) = send(&base, &rig.token, "msg-1b7e", &body).await;
    assert_eq!((status, replayed), (200, true), "{again}");

    assert_eq!(parse_sse(&again), parse_sse(&first), "the same events, from the start");
    assert!(first.contains("Hello, I can help."));
    assert_eq!(rig.model.requests.lock().unwrap().len(), 1, "the model is asked once");
    let (_, conversations) = rig.app.get_json("/v1/conversations", &rig.token).await;
    assert_eq!(conversations["conversations"].as_array().unwrap().len(), 1, "{conversations}");
    // Another user's same key is theirs: a turn of their own.
    let stranger = crate::helpers::token(&rig.workspace, &rig.secret, "someone_else");
    let (status, theirs, replayed) = send(&base, &stranger, "msg-1b7e", &body).await;
    assert_eq!((status, replayed), (200, false), "{theirs}");
    assert_eq!(rig.model.requests.lock().unwrap().len(), 2);
}

async fn the_same_key_with_another_message_is_refused_and_a_bad_key_too(db: Db) {
    let (rig, base) = rig(db).await;
    let (status, _, _) = send(&base, &rig.token, "k-42", &json!({"message": "hello"})).await;
    assert_eq!(status, 200);
    let (status, refused, _) = send(&base, &rig.token, "k-42", &json!({"message": "something else"})).await;
    assert_eq!(status, 422, "{refused}");
    let refused: Value = serde_json::from_str(&refused).unwrap();
    assert_eq!(refused["code"], "idempotency_key_reused");
    for bad in ["", "has space", &"k".repeat(256), "é"] {
        let response = rig
            .app
            .client
            .post(rig.app.url("/v1/chat/turns"))
            .bearer_auth(&rig.token)
            .header("idempotency-key", bad.as_bytes())
            .json(&json!({"message": "hello"}))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 400, "{bad:?}");
    }
    // A send refused before it started anything leaves its key free.
    let (status, _, _) = send(&base, &rig.token, "k-43", &json!({"message": "   "})).await;
    assert_eq!(status, 400);
    let (status, _, replayed) = send(&base, &rig.token, "k-43", &json!({"message": "now with words"})).await;
    assert_eq!((status, replayed), (200, false));
    assert_eq!(rig.model.requests.lock().unwrap().len(), 2);
}

async fn a_key_reused_after_a_day_is_a_new_turn(db: Db) {
    let (rig, base) = rig(db).await;
    let body = json!({"message": "hello"});
    let (_, first, _) = send(&base, &rig.token, "daily", &body).await;
    rig.app.clock.advance(Duration::from_secs(24 * 60 * 60 + 1));
    let (status, later, replayed) = send(&base, &rig.token, "daily", &body).await;
    assert_eq!((status, replayed), (200, false), "{later}");
    let turn_of = |body: &str| parse_sse(body)[0].1["turn_id"].as_str().unwrap().to_owned();
    assert_ne!(turn_of(&first), turn_of(&later));
    assert_eq!(rig.model.requests.lock().unwrap().len(), 2);
}

async fn the_same_key_sent_to_two_replicas_at_once_is_one_turn(db: Db) {
    let (rig, base) = rig(db).await;
    let other = format!("http://{}", restart(&rig.app, &[("OPENAI_BASE_URL", rig.model.base_url())]).await);
    let body = json!({"message": "hello"});
    let (one, two) = tokio::join!(send(&base, &rig.token, "twice", &body), send(&other, &rig.token, "twice", &body));
    assert_eq!((one.0, two.0), (200, 200), "{} / {}", one.1, two.1);
    assert_eq!(parse_sse(&one.1), parse_sse(&two.1));
    assert!(one.2 != two.2, "one started it, the other replayed it");
    assert_eq!(rig.model.requests.lock().unwrap().len(), 1);
}
