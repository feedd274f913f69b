//! What a workspace used per day (`GET /v1/workspace/usage`, api key):
//! turns, tokens in and out, tool calls and refusals by limit — counted in
//! memory, saved in batches, summed over replicas, kept over a restart.

use std::time::Duration;

use serde_json::{Value, json};

use crate::helpers::{
    Db, HostSpec, Rig, Step, of, restart, start_of_window, status_and_json, task_tools, workspace_with_host_and_key,
};
use crate::on_both_databases;

on_both_databases!(a_workspace_sees_its_turns_tokens_tool_calls_and_refusals_by_day);

/// The days of `usage` with a turn.
fn busy_days(usage: &Value) -> Vec<&Value> {
    usage["days"].as_array().unwrap().iter().filter(|d| d["turns"].as_u64().unwrap() > 0).collect()
}

async fn a_workspace_sees_its_turns_tokens_tool_calls_and_refusals_by_day(db: Db) {
    // A lookup (one call to the tool server), then the reply: two model
    // steps of 50 tokens, 25 in and 25 out each.
    let script = vec![Step::Call("lookup", json!({})), Step::Text("found it")];
    let rig = Rig::start(db, HostSpec::new(task_tools()), script, &[]).await;
    let (status, empty) = rig.app.get_json("/v1/workspace/usage", &rig.api_key).await;
    assert_eq!(status, 200, "{empty}");
    assert_eq!(empty["days"].as_array().unwrap().len(), 30, "the last 30 days by default");
    assert_eq!(
        empty["totals"],
        json!({"turns": 0, "input_tokens": 0, "output_tokens": 0, "tool_calls": 0, "test_turns": 0, "test_tokens": 0,
               "refusals": {}})
    );

    let limit = json!({"limits": {"turns_per_user_per_minute": 1}});
    assert_eq!(rig.app.patch_json("/v1/workspace", &rig.api_key, &limit).await.0, 200);
    start_of_window(&rig.app.clock, 60_000);
    assert_eq!(of(&rig.say("find it").await, "done")[0]["stop_reason"], "completed");
    for _ in 0..3 {
        let refused = rig.app.post("/v1/chat/turns", &rig.token, &json!({"message": "again"})).await;
        assert_eq!(refused.status(), 429);
    }

    let (status, usage) = rig.app.get_json("/v1/workspace/usage", &rig.api_key).await;
    assert_eq!(status, 200, "{usage}");
    let expected = json!({"turns": 1, "input_tokens": 50, "output_tokens": 50, "tool_calls": 1, "test_turns": 0,
                          "test_tokens": 0, "refusals": {"turns_per_user": 3}});
    assert_eq!(usage["totals"], expected, "{usage}");
    let days = busy_days(&usage);
    assert_eq!(days.len(), 1, "{usage}");
    assert_eq!(days[0]["day"], usage["until"], "today, the range's last day");
    assert_eq!(days[0]["tool_calls"], 1);

    // One day asked for: that day alone.
    let today = usage["until"].as_str().unwrap();
    let (_, one) = rig.app.get_json(&format!("/v1/workspace/usage?since={today}&until={today}"), &rig.api_key).await;
    assert_eq!(one["days"].as_array().unwrap().len(), 1);
    assert_eq!(one["totals"], expected);
}

#[tokio::test]
async fn the_range_is_checked_and_each_workspace_sees_only_its_own_usage() {
    let rig = Rig::start(Db::Sqlite, HostSpec::new(task_tools()), vec![Step::Text("hi")], &[]).await;
    rig.say("hello").await;
    for (query, why) in [
        ("since=2026-13-01", "since must be a day"),
        ("until=yesterday", "until must be a day"),
        ("since=2026-11-02&until=2026-11-01", "since must not be after until"),
        ("since=2025-01-01&until=2026-01-02", "at most 366 days"),
        ("days=3", "unknown"),
    ] {
        let (status, body) = rig.app.get_json(&format!("/v1/workspace/usage?{query}"), &rig.api_key).await;
        assert_eq!(status, 400, "{query}: {body}");
        assert!(body["error"].as_str().unwrap().contains(why), "{query}: {body}");
    }
    let (status, year) = rig.app.get_json("/v1/workspace/usage?since=2025-01-01&until=2025-12-31", &rig.api_key).await;
    assert_eq!((status, year["days"].as_array().unwrap().len()), (200, 365));
    assert_eq!(year["days"][0]["day"], "2025-01-01");

    // Another workspace sees nothing of this one's; the chat's token is no key.
    let (_, _, other_key) = workspace_with_host_and_key(&rig.app, &rig.host).await;
    let (status, theirs) = rig.app.get_json("/v1/workspace/usage", &other_key).await;
    assert_eq!((status, &theirs["totals"]["turns"]), (200, &json!(0)), "{theirs}");
    let (_, mine) = rig.app.get_json("/v1/workspace/usage", &rig.api_key).await;
    assert_eq!(mine["totals"]["turns"], 1);
    assert_eq!(rig.app.get("/v1/workspace/usage", &rig.token).await.status(), 401);
}

/// Replicas count on their own and save every few seconds; the sums are the
/// workspace's. A server that stops saves what it counted.
#[tokio::test]
async fn replicas_add_up_and_a_stopping_server_saves_its_counts() {
    let rig = Rig::start(Db::Sqlite, HostSpec::new(task_tools()), vec![Step::Text("hi")], &[]).await;
    let model = rig.model.base_url();
    let replica = restart(&rig.app, &[("OPENAI_BASE_URL", model.clone()), ("CA_USAGE_FLUSH_MS", "100".into())]).await;
    let on_replica = rig.app.client.post(format!("http://{replica}/v1/chat/turns")).bearer_auth(&rig.token);
    let streamed = on_replica.json(&json!({"message": "hello"})).send().await.unwrap();
    assert_eq!(streamed.status(), 200);
    assert!(streamed.text().await.unwrap().contains("event: done"));
    // The first server reads its own counts and the replica's, once the
    // replica has saved them.
    let mut turns = Value::Null;
    for _ in 0..100 {
        turns = rig.app.get_json("/v1/workspace/usage", &rig.api_key).await.1["totals"]["turns"].clone();
        if turns == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(turns, 1, "the replica's turn");

    // A turn on the first server (its counts saved only every 10 s), then
    // it stops: the replica reads both turns.
    rig.say("hello again").await;
    rig.app.shut_down().await;
    let (status, usage) = status_and_json(
        rig.app
            .client
            .get(format!("http://{replica}/v1/workspace/usage"))
            .bearer_auth(&rig.api_key)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(usage["totals"]["turns"], 2, "{usage}");
}
