//! Erasing an end user (`DELETE /v1/users/{external_user_id}`): every row
//! stored for them in the workspace goes, nobody else's; the audit trail
//! keeps the erasure and the kind and time of their entries, not their content.

use serde_json::{Value, json};

use crate::helpers::{Db, HostSpec, Rig, Step, of, pending, task_tools, token};
use crate::on_both_databases;

on_both_databases!(
    erasing_a_user_deletes_all_of_theirs_and_nothing_of_anyone_elses,
    erasure_needs_the_api_key_and_a_user_id,
);

async fn count(rig: &Rig, sql: &str) -> i64 {
    let (n,): (i64,) = sqlx::query_as(sql).bind(&rig.workspace).fetch_one(&rig.app.state.pool).await.unwrap();
    n
}

async fn erase(rig: &Rig, user: &str) -> (u16, Value) {
    let response = crate::helpers::http()
        .delete(rig.app.url(&format!("/v1/users/{user}")))
        .bearer_auth(&rig.api_key)
        .send()
        .await
        .unwrap();
    (response.status().as_u16(), response.json().await.unwrap_or(Value::Null))
}

async fn erasing_a_user_deletes_all_of_theirs_and_nothing_of_anyone_elses(db: Db) {
    let script = vec![
        Step::Text("Hello there."),
        Step::Call("create_task", json!({"title": "Secret plans"})),
        Step::Text("Hi other."),
    ];
    let rig = Rig::start(db, HostSpec::new(task_tools()), script, &[]).await;
    let mut turns = Vec::new();
    let said = rig.say("my phone number is 555-0100").await;
    turns.push(of(&said, "turn")[0]["turn_id"].as_str().unwrap().to_owned());
    let asked = rig.say("create a task called Secret plans").await;
    turns.push(of(&asked, "turn")[0]["turn_id"].as_str().unwrap().to_owned());
    let action = pending(&asked)["action_id"].as_str().unwrap().to_owned();
    let other = token(&rig.workspace, &rig.secret, "other_user");
    rig.app.turn(&other, None, "hello").await;
    // Erased only once their streams are stored to the end (written behind the stream).
    for turn in &turns {
        crate::helpers::events_stored(&rig.app, turn).await;
    }
    let theirs = "SELECT COUNT(*) FROM conversations WHERE workspace_id = $1 AND external_user_id = 'user_42'";
    assert_eq!(count(&rig, theirs).await, 2);

    let (status, answer) = erase(&rig, "user_42").await;

    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["external_user_id"], "user_42");
    let deleted = &answer["deleted"];
    assert_eq!(deleted["conversations"], 2);
    assert_eq!(deleted["actions"], 1);
    assert_eq!(deleted["turns"], 2);
    assert!(deleted["messages"].as_u64().unwrap() >= 4, "{deleted}");
    assert!(deleted["turn_events"].as_u64().unwrap() > 0, "{deleted}");
    assert!(deleted["counters"].as_u64().unwrap() >= 1, "{deleted}");
    assert!(deleted["audit_entries_scrubbed"].as_u64().unwrap() >= 1, "the action's previewed entry");
    assert_eq!(count(&rig, theirs).await, 0);
    let (status, list) = rig.app.get_json("/v1/conversations", &rig.token).await;
    assert_eq!((status, list["conversations"].clone()), (200, json!([])));
    assert_eq!(rig.act(&action, "apply", None).await.0, 404, "their pending action is gone");
    // Nobody else's.
    let (_, others) = rig.app.get_json("/v1/conversations", &other).await;
    assert_eq!(others["conversations"].as_array().unwrap().len(), 1);
    let stored: Vec<(String,)> =
        sqlx::query_as("SELECT content FROM messages").fetch_all(&rig.app.state.pool).await.unwrap();
    assert!(stored.iter().all(|(c,)| !c.contains("555-0100") && !c.contains("Secret plans")));
    // The trail: the erasure, and their entries without content or name.
    let (_, trail) = rig.app.get_json("/v1/audit", &rig.api_key).await;
    let text = trail.to_string();
    assert!(!text.contains("Secret plans"), "{text}");
    let items = trail["items"].as_array().unwrap();
    assert_eq!(items[0]["action"], "user.erased");
    assert_eq!(items[0]["user"], "user_42");
    assert_eq!(items[0]["detail"]["deleted"]["conversations"], 2);
    let previewed = items.iter().find(|i| i["action"] == "action.previewed").unwrap();
    assert_eq!((previewed["user"].clone(), previewed["detail"].clone()), (Value::Null, json!({"erased": true})));
    assert_eq!(previewed["tool"], "create_task", "the kind and time stay");

    // Again: nothing left, still answered and recorded.
    let (status, again) = erase(&rig, "user_42").await;
    assert_eq!(status, 200);
    assert!(again["deleted"].as_object().unwrap().values().all(|n| n == 0), "{again}");
}

async fn erasure_needs_the_api_key_and_a_user_id(db: Db) {
    let rig = Rig::start(db, HostSpec::new(task_tools()), vec![Step::Text("hi")], &[]).await;
    let response = crate::helpers::http().delete(rig.app.url("/v1/users/user_42")).bearer_auth(&rig.token).send().await;
    assert_eq!(response.unwrap().status(), 401, "an embed token cannot erase");
    let long = "x".repeat(257);
    assert_eq!(erase(&rig, &long).await.0, 400);
}

/// A batch of stream events written just after its turn was erased is
/// forgotten by the next sweep, however recent.
#[tokio::test]
async fn stream_events_left_behind_an_erased_turn_are_forgotten() {
    let rig = Rig::start(Db::Sqlite, HostSpec::new(task_tools()), vec![Step::Text("hi")], &[]).await;
    let pool = &rig.app.state.pool;
    sqlx::query("INSERT INTO turn_events (turn_id, seq, kind, data, created_at) VALUES ('turn_gone', 1, 'text', '\"secret\"', 1)")
        .execute(pool)
        .await
        .unwrap();
    let said = rig.say("hello").await;
    let kept = of(&said, "turn")[0]["turn_id"].as_str().unwrap().to_owned();
    crate::helpers::events_stored(&rig.app, &kept).await;

    server::db::turn_events::forget_before(pool, 0).await.unwrap();

    let left: Vec<(String,)> =
        sqlx::query_as("SELECT DISTINCT turn_id FROM turn_events").fetch_all(pool).await.unwrap();
    assert_eq!(left, [(kept,)], "the orphan went, the live turn's events stayed");
}
