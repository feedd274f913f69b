//! Rich results: a tool's `component` reaches the widget as a `component`
//! event, is restored with the conversation, refreshes in place, and its
//! own buttons may call only the tools it declared — never a delete, and
//! a create or update only when the host marked it `direct`.

use serde_json::{Value, json};

use crate::helpers::{Db, HostSpec, Rig, Step, of, pending, token};
use crate::on_both_databases;

on_both_databases!(
    a_tools_component_is_shown_and_restored,
    a_later_result_refreshes_the_component_in_place,
    a_component_calls_only_its_declared_tools_and_never_a_delete,
);

fn tools() -> Value {
    json!([
        { "name": "menu", "verb": "get", "inputSchema": {"type": "object"} },
        { "name": "add_item", "verb": "update", "direct": true,
          "inputSchema": {"type": "object", "properties": {"title": {"type": "string"}}} },
        { "name": "rename", "verb": "update", "inputSchema": {"type": "object"} },
        { "name": "wipe", "verb": "delete", "inputSchema": {"type": "object"} },
        { "name": "lookup", "verb": "get", "inputSchema": {"type": "object"} },
    ])
}

fn component(data: Value, update: bool) -> Value {
    json!({"kind": "menu_cart", "data": data, "tools": ["add_item", "wipe", "rename", "not_listed"], "update": update})
}

fn host() -> HostSpec {
    HostSpec::new(tools())
        .execute_for(
            "menu",
            200,
            json!({"output": {"status": "ready", "component": component(json!({"n": 1}), false)}}),
        )
        .execute_for(
            "add_item",
            200,
            json!({"output": {"status": "added", "component": component(json!({"n": 2}), true)}}),
        )
}

async fn conversation(rig: &Rig, id: &str) -> Value {
    let (status, view) = rig.app.get_json(&format!("/v1/conversations/{id}"), &rig.token).await;
    assert_eq!(status, 200, "{view}");
    view
}

async fn call(rig: &Rig, bearer: &str, component_id: &str, body: Value) -> (u16, Value) {
    rig.app.post_json(&format!("/v1/components/{component_id}/call"), bearer, &body).await
}

async fn a_tools_component_is_shown_and_restored(db: Db) {
    let script = vec![Step::Call("menu", json!({})), Step::Text("Here it is: {last_tool}")];
    let rig = Rig::start(db, host(), script, &[]).await;

    let events = rig.say("show me the menu").await;

    let shown = of(&events, "component");
    assert_eq!(shown.len(), 1);
    assert_eq!(shown[0]["kind"], "menu_cart");
    assert_eq!(shown[0]["data"], json!({"n": 1}));
    assert_eq!(shown[0]["update"], false);
    assert!(shown[0]["call_id"].as_str().is_some_and(|c| !c.is_empty()));
    let component_id = shown[0]["component_id"].as_str().unwrap();
    let told = &rig.model.last_tool_messages()[0];
    assert!(told.contains("ready") && !told.contains("menu_cart"), "the model is not sent the component: {told}");

    let conversation_id = of(&events, "turn")[0]["conversation_id"].as_str().unwrap().to_owned();
    let view = conversation(&rig, &conversation_id).await;
    let answer = &view["messages"][1];
    assert_eq!(answer["role"], "assistant");
    assert_eq!(
        answer["components"],
        json!([{"component_id": component_id, "call_id": shown[0]["call_id"], "kind": "menu_cart", "data": {"n": 1}}])
    );
}

async fn a_later_result_refreshes_the_component_in_place(db: Db) {
    let script = vec![
        Step::Call("menu", json!({})),
        Step::Text("Menu."),
        Step::Call("add_item", json!({"title": "x"})),
        Step::Text("Added."),
    ];
    let rig = Rig::start(db, host(), script, &[]).await;
    let first = rig.say("menu").await;
    let conversation_id = of(&first, "turn")[0]["conversation_id"].as_str().unwrap().to_owned();
    let component_id = of(&first, "component")[0]["component_id"].as_str().unwrap().to_owned();
    let second = rig.app.turn(&rig.token, Some(&conversation_id), "add one").await;
    let action = pending(&second);

    let (status, applied, _) = rig.act(action["action_id"].as_str().unwrap(), "apply", None).await;

    assert_eq!(status, 200);
    let refreshed = of(&applied, "component");
    assert_eq!(refreshed.len(), 1);
    assert_eq!(refreshed[0]["update"], true, "the component on screen is refreshed, not repeated");
    assert_eq!(refreshed[0]["component_id"], component_id.as_str());
    assert_eq!(refreshed[0]["data"], json!({"n": 2}));
    let view = conversation(&rig, &conversation_id).await;
    let all: Vec<&Value> = view["messages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["components"].as_array().into_iter().flatten())
        .collect();
    assert_eq!(all.len(), 1);
    assert_eq!(all[0]["data"], json!({"n": 2}), "a reload shows the newest data");
}

async fn a_component_calls_only_its_declared_tools_and_never_a_delete(db: Db) {
    let script = vec![Step::Call("menu", json!({})), Step::Text("Menu.")];
    let rig = Rig::start(db, host(), script, &[]).await;
    let events = rig.say("menu").await;
    let component_id = of(&events, "component")[0]["component_id"].as_str().unwrap().to_owned();
    let conversation_id = of(&events, "turn")[0]["conversation_id"].as_str().unwrap().to_owned();
    let executes = rig.host.count("execute");

    let (status, body) =
        call(&rig, &rig.token, &component_id, json!({"tool": "add_item", "arguments": {"title": "x"}})).await;

    assert_eq!(status, 200, "{body}");
    assert_eq!(body["component"]["component_id"], component_id.as_str());
    assert_eq!(body["component"]["data"], json!({"n": 2}));
    let sent = rig.host.calls_of("execute").pop().unwrap();
    assert_eq!(sent["tool"], "add_item");
    assert_eq!(sent["arguments"], json!({"title": "x"}));
    assert_eq!(sent["execution"]["externalUserId"], "user_42", "the caller's own scope");
    assert!(sent["execution"]["requestId"].as_str().unwrap().starts_with("call_"));
    let view = conversation(&rig, &conversation_id).await;
    assert_eq!(view["messages"][1]["components"][0]["data"], json!({"n": 2}), "the click's result is kept");
    let executes = executes + 1;

    let refusals = [
        (json!({"tool": "wipe"}), 403, "delete_not_allowed"),
        (json!({"tool": "rename"}), 403, "not_direct"),
        (json!({"tool": "not_listed"}), 403, "tool_not_allowed"),
        (json!({"tool": "lookup"}), 403, "tool_not_declared"),
        (json!({"tool": "add_item", "arguments": [1]}), 400, "bad_request"),
        (json!({"tool": "add_item", "arguments": {"title": 5}}), 400, "bad_request"),
        (json!({"arguments": {}}), 400, "bad_request"),
    ];
    for (body, want_status, want_code) in refusals {
        let (status, answer) = call(&rig, &rig.token, &component_id, body.clone()).await;
        assert_eq!((status, answer["code"].as_str()), (want_status, Some(want_code)), "{body}: {answer}");
        assert!(answer["error"].as_str().is_some_and(|e| !e.is_empty()));
    }
    assert_eq!(rig.host.count("execute"), executes, "no refused call reaches the host");

    let stranger = token(&rig.workspace, &rig.secret, "someone_else");
    let (status, _) = call(&rig, &stranger, &component_id, json!({"tool": "add_item"})).await;
    assert_eq!(status, 404, "another user's component does not exist for them");
    let (status, _) = call(&rig, &rig.token, "cmp_nope", json!({"tool": "add_item"})).await;
    assert_eq!(status, 404);
    let (status, _) = call(&rig, "not-a-token", &component_id, json!({"tool": "add_item"})).await;
    assert_eq!(status, 401);
    assert_eq!(rig.host.count("execute"), executes);
}

#[tokio::test]
async fn a_host_failure_on_a_components_call_is_a_generic_502() {
    let host = host().execute_for("add_item", 500, json!({"error": "db password is hunter2"}));
    let rig = Rig::start(Db::Sqlite, host, vec![Step::Call("menu", json!({})), Step::Text("Menu.")], &[]).await;
    let events = rig.say("menu").await;
    let component_id = of(&events, "component")[0]["component_id"].as_str().unwrap().to_owned();

    let (status, body) = call(&rig, &rig.token, &component_id, json!({"tool": "add_item"})).await;

    assert_eq!(status, 502);
    assert_eq!(body["code"], "host_failed");
    assert!(!body.to_string().contains("hunter2"), "the host's text never reaches the user");
}

#[tokio::test]
async fn a_malformed_component_is_skipped_and_the_reply_goes_on() {
    let host = HostSpec::new(tools()).execute_for(
        "menu",
        200,
        json!({"output": {"status": "ok", "component": {"kind": "<img onerror=x>", "data": {}}}}),
    );
    let rig = Rig::start(Db::Sqlite, host, vec![Step::Call("menu", json!({})), Step::Text("Menu.")], &[]).await;

    let events = rig.say("menu").await;

    assert!(of(&events, "component").is_empty());
    assert_eq!(of(&events, "done")[0]["stop_reason"], "completed");
    assert_eq!(of(&events, "message")[0]["text"], "Menu.");
}

#[tokio::test]
async fn a_flood_of_clicks_is_limited_per_user() {
    let rig = Rig::start(Db::Sqlite, host(), vec![Step::Call("menu", json!({})), Step::Text("Menu.")], &[]).await;
    let events = rig.say("menu").await;
    let component_id = of(&events, "component")[0]["component_id"].as_str().unwrap().to_owned();
    let before = rig.host.count("execute");
    crate::helpers::start_of_window(&rig.app.clock, 10_000);
    let mut statuses = Vec::new();
    for _ in 0..25 {
        statuses.push(call(&rig, &rig.token, &component_id, json!({"tool": "add_item"})).await.0);
    }
    assert!(statuses[..20].iter().all(|s| *s == 200), "{statuses:?}");
    assert!(statuses[20..].iter().all(|s| *s == 429), "{statuses:?}");
    assert_eq!(rig.host.count("execute"), before + 20, "refused clicks never reach the host");
}
