//! The turn loop end to end, through HTTP: events, tools, cards, limits,
//! persistence and who may see what.

use serde_json::{Value, json};

use crate::helpers::{
    Db, FakeHost, ScriptedModel, Step, lookup_tool, names, of, spawn_app, token, workspace_with_host,
};
use crate::on_both_databases;

on_both_databases!(
    the_demo_answers_show_me_the_menu_with_cards,
    a_conversation_is_restored_and_continued,
    a_failing_host_is_reported_generically,
    the_iteration_limit_ends_the_turn_cleanly,
);

async fn the_demo_answers_show_me_the_menu_with_cards(db: Db) {
    let app = spawn_app(db).start().await;
    let token = app.demo_token("guest_1").await;

    let events = app.turn(&token, None, "show me the menu").await;

    let names = names(&events);
    assert_eq!(names.first(), Some(&"turn"));
    assert_eq!(names.last(), Some(&"done"));
    assert_eq!(of(&events, "done")[0]["stop_reason"], "completed");
    let tools = of(&events, "tool");
    assert_eq!(tools[0]["name"], "show_menu");
    assert_eq!(tools[0]["status"], "started");
    assert_eq!(tools[1]["status"], "succeeded");
    let cards = &of(&events, "display")[0]["cards"];
    let titles: Vec<&str> = cards.as_array().unwrap().iter().map(|c| c["title"].as_str().unwrap()).collect();
    assert_eq!(
        titles,
        ["Stone-baked Margherita", "Harvest Roast Bowl", "House Garden Salad", "Lemon Tart", "Sparkling Water"]
    );
    assert!(cards[0]["url"].as_str().unwrap().ends_with("/bistro/menu#stone_pizza"));
    assert_eq!(cards[3]["subtitle"], "$8 · Desserts");
    // The answer streamed in pieces, and the finished message is the sum of them.
    let streamed: String = of(&events, "text").iter().map(|t| t["delta"].as_str().unwrap()).collect();
    assert!(of(&events, "text").len() > 3);
    let message = of(&events, "message")[0];
    assert_eq!(message["text"], streamed.as_str());
    assert!(message["html"].as_str().unwrap().contains("Here is the menu: <strong>5 dishes</strong>"), "{message}");
}

async fn a_conversation_is_restored_and_continued(db: Db) {
    let app = spawn_app(db).start().await;
    let token = app.demo_token("guest_2").await;
    let first = app.turn(&token, None, "show me the menu").await;
    let conversation = of(&first, "turn")[0]["conversation_id"].as_str().unwrap().to_owned();

    let second = app.turn(&token, Some(&conversation), "hello").await;
    assert_eq!(of(&second, "turn")[0]["conversation_id"], conversation.as_str());

    let view: Value = app.get(&format!("/v1/conversations/{conversation}"), &token).await.json().await.unwrap();
    let messages = view["messages"].as_array().unwrap();
    let roles: Vec<&str> = messages.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["user", "assistant", "user", "assistant"]);
    assert_eq!(messages[0]["text"], "show me the menu");
    assert_eq!(messages[1]["cards"].as_array().unwrap().len(), 5);
    assert!(messages[3]["text"].as_str().unwrap().starts_with("Hello!"));
    assert_eq!(view["pending_action"], Value::Null);

    let list: Value = app.get("/v1/conversations", &token).await.json().await.unwrap();
    assert_eq!(list["conversations"][0]["id"], conversation.as_str());
    assert_eq!(list["conversations"][0]["title"], "show me the menu");

    // Another user of the same workspace sees nothing of it.
    let stranger = app.demo_token("guest_3").await;
    let response = app.get(&format!("/v1/conversations/{conversation}"), &stranger).await;
    assert_eq!(response.status(), 404);
    let response =
        app.post("/v1/chat/turns", &stranger, &json!({"conversation_id": conversation, "message": "hi"})).await;
    assert_eq!(response.status(), 404);
    let list: Value = app.get("/v1/conversations", &stranger).await.json().await.unwrap();
    assert_eq!(list["conversations"], json!([]));
}

async fn a_failing_host_is_reported_generically(db: Db) {
    let host = FakeHost::start(lookup_tool(), 500, json!({"error": "database password hunter2 rejected"})).await;
    let model =
        ScriptedModel::start(vec![Step::Call("lookup", json!({"q": "x"})), Step::Text("The tool said: {last_tool}")])
            .await;
    let app = spawn_app(db).env("OPENAI_BASE_URL", model.base_url()).env("OPENAI_API_KEY", "k").start().await;
    let (workspace, secret) = workspace_with_host(&app, &host).await;

    let events = app.turn(&token(&workspace, &secret, "user_42"), None, "look it up").await;

    let tools = of(&events, "tool");
    assert_eq!(tools.last().unwrap()["status"], "failed");
    let message = of(&events, "message")[0]["text"].as_str().unwrap().to_owned();
    assert!(message.contains("host_failed"), "{message}");
    assert!(!message.contains("hunter2"), "the host's error text reached the model: {message}");
    assert_eq!(of(&events, "done")[0]["stop_reason"], "completed");
    // The host got the scope: on GET as query parameters, on POST in the body.
    let calls = host.calls.lock().unwrap().clone();
    let tools_query = calls.iter().rev().find(|(k, _)| k == "tools").unwrap().1.as_str().unwrap().to_owned();
    assert!(
        tools_query.contains(&format!("workspaceId={workspace}")) && tools_query.contains("externalUserId=user_42")
    );
    assert!(
        tools_query.contains("permissions=tasks%3Aread") && tools_query.contains("requestId=req_"),
        "{tools_query}"
    );
    let execute = &calls.iter().find(|(k, _)| k == "execute").unwrap().1;
    assert_eq!(execute["tool"], "lookup");
    assert_eq!(execute["arguments"], json!({"q": "x"}));
    assert_eq!(execute["execution"]["externalUserId"], "user_42");
    assert_eq!(execute["execution"]["permissions"], json!(["tasks:read"]));
    // The model was told the context as quoted data.
    let first_request = model.requests.lock().unwrap()[0].clone();
    let system = first_request["messages"][0]["content"].as_str().unwrap();
    assert!(system.contains("<host_context>") && system.contains("Apollo"));
}

async fn the_iteration_limit_ends_the_turn_cleanly(db: Db) {
    let host = FakeHost::start(lookup_tool(), 200, json!({"output": {"found": 1}})).await;
    let model = ScriptedModel::start(vec![Step::Call("lookup", json!({}))]).await;
    let app = spawn_app(db).env("OPENAI_BASE_URL", model.base_url()).env("CA_MAX_ITERATIONS", "2").start().await;
    let (workspace, secret) = workspace_with_host(&app, &host).await;

    let events = app.turn(&token(&workspace, &secret, "u"), None, "loop forever").await;

    assert_eq!(of(&events, "done")[0]["stop_reason"], "iteration_limit");
    assert_eq!(host.count("execute"), 2);
    assert!(of(&events, "message")[0]["text"].as_str().unwrap().contains("more steps than I may take"));
}

#[tokio::test]
async fn a_missing_or_forged_token_is_401() {
    let app = spawn_app(Db::Sqlite).start().await;
    let send = |token: Option<String>| {
        let mut request = app.client.post(app.url("/v1/chat/turns")).json(&json!({"message": "hi"}));
        if let Some(t) = token {
            request = request.bearer_auth(t);
        }
        request.send()
    };
    assert_eq!(send(None).await.unwrap().status(), 401);
    assert_eq!(send(Some("garbage".into())).await.unwrap().status(), 401);
    assert_eq!(send(Some(token("ws_demo", "not-the-secret", "u"))).await.unwrap().status(), 401);
    let body: Value = send(Some(token("ws_nope", "x", "u"))).await.unwrap().json().await.unwrap();
    assert_eq!(body["code"], "unauthorized");
}

#[tokio::test]
async fn a_bad_body_is_400_naming_the_field() {
    let app = spawn_app(Db::Sqlite).start().await;
    let token = app.demo_token("u").await;
    let response = app.post("/v1/chat/turns", &token, &json!({"msg": "hi"})).await;
    assert_eq!(response.status(), 400);
    let body: Value = response.json().await.unwrap();
    assert!(body["error"].as_str().unwrap().contains("message"), "{body}");
    assert_eq!(body["code"], "bad_request");
    let response = app.post("/v1/chat/turns", &token, &json!({"message": "   "})).await;
    assert_eq!(response.status(), 400);
}

#[tokio::test]
async fn a_page_outside_allowed_origins_is_refused() {
    let app = spawn_app(Db::Sqlite).start().await;
    let token = app.demo_token("u").await;
    let response = app
        .client
        .post(app.url("/v1/chat/turns"))
        .bearer_auth(&token)
        .header("origin", "https://evil.example")
        .json(&json!({"message": "hi"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 403);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["code"], "origin_not_allowed");
}

/// Behind a proxy the assistant answers at `CA_PUBLIC_URL`, not at its
/// listen address: that is the widget frame's own origin, and the links
/// the demo bistro hands out point there.
#[tokio::test]
async fn the_public_url_is_the_assistants_own_origin_behind_a_proxy() {
    let public = "https://assistant.example";
    let app = spawn_app(Db::Sqlite).env("CA_PUBLIC_URL", public).start().await;
    let token = app.demo_token("u").await;
    let turn = |origin: &'static str| {
        app.client
            .post(app.url("/v1/chat/turns"))
            .bearer_auth(&token)
            .header("origin", origin)
            .json(&json!({"message": "show me the menu"}))
            .send()
    };

    let from_frame = turn(public).await.unwrap();
    assert_eq!(from_frame.status(), 200, "the widget frame's own calls are not a foreign origin");
    let events = crate::helpers::parse_sse(&from_frame.text().await.unwrap());
    let cards = &of(&events, "display")[0]["cards"];
    assert!(cards[0]["url"].as_str().unwrap().starts_with("https://assistant.example/bistro/menu#"), "{cards}");

    assert_eq!(turn("https://evil.example").await.unwrap().status(), 403);
}
