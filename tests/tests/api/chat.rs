//! The turn loop end to end, through HTTP: events, tools, cards, limits,
//! persistence and who may see what.

use serde_json::{Value, json};
use sqlx::Connection;

use crate::helpers::{
    Db, FakeHost, HostSpec, Rig, ScriptedModel, Step, lookup_tool, names, of, pending, spawn_app, task_tools, token,
    workspace_with_host,
};
use crate::on_both_databases;

on_both_databases!(
    the_demo_answers_show_me_the_menu_with_cards,
    a_conversation_is_restored_and_continued,
    a_failing_host_is_reported_generically,
    the_iteration_limit_ends_the_turn_cleanly,
    a_reply_the_database_refuses_still_ends_its_turn_and_the_next_turn_runs,
    writes_cut_off_midway_leave_all_or_nothing_and_the_next_write_goes_in,
    tool_results_are_saved_in_order_with_the_write_that_follows_them,
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
    let written = || async {
        let row: (i64, i64, i64, Option<String>) = sqlx::query_as(
            "SELECT (SELECT COUNT(*) FROM turns WHERE conversation_id = $1),
                    (SELECT COUNT(*) FROM messages WHERE conversation_id = $1), updated_at, lang
             FROM conversations WHERE id = $1",
        )
        .bind(&conversation)
        .fetch_one(&app.state.pool)
        .await
        .unwrap();
        row
    };
    let before = written().await;
    let response = app
        .post("/v1/chat/turns", &stranger, &json!({"conversation_id": conversation, "message": "hi", "lang": "de"}))
        .await;
    assert_eq!(response.status(), 404);
    assert_eq!(
        written().await,
        before,
        "nothing of the stranger's is written in it: no turn, message, time or language"
    );
    assert_eq!(before.0, 2, "the owner's two turns");
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

/// A turn's reply and its end are written together: when the reply is
/// refused, the turn's end is still recorded (by another write), and
/// nothing of the refused write holds the database — the next turn runs
/// and is saved, seen from a connection of its own.
async fn a_reply_the_database_refuses_still_ends_its_turn_and_the_next_turn_runs(db: Db) {
    let app = spawn_app(db).start().await;
    let pool = &app.state.pool;
    refuse_replies_starting(pool, "Hello!").await;
    let token = app.demo_token("guest_refused").await;
    let first = app.turn(&token, None, "hello").await;
    assert_eq!(of(&first, "done")[0]["stop_reason"], "completed");
    assert!(of(&first, "message").is_empty(), "a reply not saved is not announced as saved");
    let conversation = of(&first, "turn")[0]["conversation_id"].as_str().unwrap().to_owned();
    let first_turn = of(&first, "turn")[0]["turn_id"].as_str().unwrap().to_owned();

    let second = app.turn(&token, Some(&conversation), "show me the menu").await;
    assert_eq!(of(&second, "done")[0]["stop_reason"], "completed");
    let second_turn = of(&second, "turn")[0]["turn_id"].as_str().unwrap().to_owned();

    // Committed: another connection sees both turns ended and the second reply.
    let mut other = sqlx::AnyConnection::connect(&app.database_url).await.unwrap();
    for turn in [&first_turn, &second_turn] {
        let (reason,): (Option<String>,) = sqlx::query_as("SELECT stop_reason FROM turns WHERE id = $1")
            .bind(turn)
            .fetch_one(&mut other)
            .await
            .unwrap();
        assert_eq!(reason.as_deref(), Some("completed"), "{turn}");
    }
    let roles: Vec<(String,)> = sqlx::query_as("SELECT role FROM messages WHERE conversation_id = $1 ORDER BY seq")
        .bind(&conversation)
        .fetch_all(&mut other)
        .await
        .unwrap();
    let roles: Vec<&str> = roles.iter().map(|(r,)| r.as_str()).collect();
    assert_eq!(roles, ["user", "user", "assistant", "tool", "assistant"]);
}

/// Makes the database refuse every assistant message whose text starts
/// with `prefix` (a trigger), as a database refuses a write it cannot take.
async fn refuse_replies_starting(pool: &server::db::Pool, prefix: &str) {
    let refuse = if pool.is_postgres() {
        vec![
            format!(
                "CREATE FUNCTION refuse_reply() RETURNS trigger AS $$ BEGIN
                   IF NEW.role = 'assistant' AND NEW.content LIKE '{prefix}%' THEN RAISE EXCEPTION 'refused by the test'; END IF;
                   RETURN NEW; END $$ LANGUAGE plpgsql"
            ),
            "CREATE TRIGGER refuse_reply BEFORE INSERT ON messages FOR EACH ROW EXECUTE FUNCTION refuse_reply()".into(),
        ]
    } else {
        vec![format!(
            "CREATE TRIGGER refuse_reply BEFORE INSERT ON messages
             WHEN NEW.role = 'assistant' AND NEW.content LIKE '{prefix}%'
             BEGIN SELECT RAISE(ABORT, 'refused by the test'); END"
        )]
    };
    for statement in refuse {
        sqlx::query(&statement).execute(pool).await.unwrap();
    }
}

/// Writes that go together and are cut off midway (their caller gone while
/// the database waits on another writer) leave all of themselves or
/// nothing, and the database takes the next write at once.
async fn writes_cut_off_midway_leave_all_or_nothing_and_the_next_write_goes_in(db: Db) {
    let app = spawn_app(db).start().await;
    let pool = &app.state.pool;
    let demo = server::demo::DEMO_WORKSPACE;
    // Another connection holds the write lock (SQLite) or the turns table
    // (PostgreSQL): the writes wait on it.
    let mut other = sqlx::AnyConnection::connect(&app.database_url).await.unwrap();
    if pool.is_postgres() {
        sqlx::query("BEGIN").execute(&mut other).await.unwrap();
        sqlx::query("LOCK TABLE turns IN EXCLUSIVE MODE").execute(&mut other).await.unwrap();
    } else {
        sqlx::query("BEGIN IMMEDIATE").execute(&mut other).await.unwrap();
    }
    let mut cut =
        Box::pin(server::db::create_conversation_with_turn(pool, demo, "cut", "cut off", None, "turn_cut", "words"));
    assert!(futures::poll!(cut.as_mut()).is_pending(), "the writes wait on the other connection");
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    drop(cut);
    sqlx::query("COMMIT").execute(&mut other).await.unwrap();

    let next = server::db::create_conversation_with_turn(pool, demo, "next", "goes in", None, "turn_next", "words");
    let next = tokio::time::timeout(std::time::Duration::from_secs(10), next).await.expect("in time");
    next.expect("the next write goes in");
    let count = |sql: &'static str, bind: &'static str| {
        let database_url = app.database_url.clone();
        async move {
            let mut fresh = sqlx::AnyConnection::connect(&database_url).await.unwrap();
            let (n,): (i64,) = sqlx::query_as(sql).bind(bind).fetch_one(&mut fresh).await.unwrap();
            n
        }
    };
    assert_eq!(count("SELECT COUNT(*) FROM turns WHERE id = $1", "turn_next").await, 1);
    assert_eq!(count("SELECT COUNT(*) FROM conversations WHERE external_user_id = $1", "next").await, 1);
    // The cut-off writes: all, or none.
    let turn = count("SELECT COUNT(*) FROM turns WHERE id = $1", "turn_cut").await;
    let conversation = count("SELECT COUNT(*) FROM conversations WHERE external_user_id = $1", "cut").await;
    let message = count(
        "SELECT COUNT(*) FROM messages m JOIN conversations c ON c.id = m.conversation_id WHERE c.external_user_id = $1",
        "cut",
    )
    .await;
    assert!([turn, conversation, message] == [0; 3] || [turn, conversation, message] == [1; 3], "all or nothing");
}

/// A saved message: its seq, role, content, the call a tool row answers,
/// the calls an assistant row made.
type Row = (i64, String, String, Option<String>, Option<String>);

/// A conversation's saved transcript, in order.
async fn saved(rig: &Rig, conversation: &str) -> Vec<Row> {
    let mut fresh = sqlx::AnyConnection::connect(&rig.app.database_url).await.unwrap();
    sqlx::query_as(
        "SELECT seq, role, content, tool_call_id, tool_calls FROM messages WHERE conversation_id = $1 ORDER BY seq",
    )
    .bind(conversation)
    .fetch_all(&mut fresh)
    .await
    .unwrap()
}

/// Checks a transcript: its roles, its numbers one after the other from
/// 1, and each tool row answering, in order, the calls of the assistant
/// row before it.
fn check_transcript(rows: &[Row], roles: &[&str]) {
    let seen: Vec<&str> = rows.iter().map(|r| r.1.as_str()).collect();
    assert_eq!(seen, roles, "{rows:?}");
    let seqs: Vec<i64> = rows.iter().map(|r| r.0).collect();
    assert_eq!(seqs, (1..=rows.len() as i64).collect::<Vec<_>>(), "{rows:?}");
    let mut asked: Vec<String> = Vec::new();
    for (_, role, _, answers, calls) in rows {
        match role.as_str() {
            "assistant" => {
                let calls: Vec<Value> = calls.as_deref().map_or(Vec::new(), |c| serde_json::from_str(c).unwrap());
                asked = calls.iter().map(|c| c["id"].as_str().unwrap().to_owned()).collect();
                asked.reverse();
            }
            "tool" => assert_eq!(answers.as_deref(), asked.pop().as_deref(), "{rows:?}"),
            _ => {}
        }
    }
}

/// Issue #47: a tool's result is written with the turn's next write — the
/// next step's message, the reply, or the turn's end — not on its own.
/// Whichever write carries them, the transcript keeps its order, its
/// numbers (on PostgreSQL one statement inserts them all) and every
/// result: with and without budgets counting the tokens, when the turn
/// ends on a pending action, and when the reply itself is refused.
async fn tool_results_are_saved_in_order_with_the_write_that_follows_them(db: Db) {
    let two_steps = || {
        vec![
            Step::Calls(vec![("lookup", json!({"q": "a"})), ("lookup", json!({"q": "b"}))]),
            Step::Calls(vec![("lookup", json!({"q": "c"})), ("lookup", json!({"q": "d"}))]),
            Step::Text("Found them."),
        ]
    };
    let roles = ["user", "assistant", "tool", "tool", "assistant", "tool", "tool", "assistant"];
    for budgets in ["2000000", "0"] {
        let env = [("CA_WORKSPACE_DAILY_TOKENS", budgets)];
        let rig = Rig::start(db, HostSpec::new(task_tools()), two_steps(), &env).await;
        let events = rig.say("look up four things").await;
        assert_eq!(of(&events, "done")[0]["stop_reason"], "completed", "{events:?}");
        let conversation = of(&events, "turn")[0]["conversation_id"].as_str().unwrap().to_owned();
        let rows = saved(&rig, &conversation).await;
        check_transcript(&rows, &roles);
        assert_eq!(rows[7].2, "Found them.");
        // The model's last step was given all four results.
        assert_eq!(rig.model.last_tool_messages().len(), 4);
        // The next turn goes on from there.
        let next = rig.app.turn(&rig.token, Some(&conversation), "and again").await;
        assert_eq!(of(&next, "done")[0]["stop_reason"], "completed");
        let rows = saved(&rig, &conversation).await;
        assert_eq!(rows.len(), 10, "budgets {budgets}: {rows:?}");
        check_transcript(&rows[..8], &roles);
        assert_eq!(rows.iter().map(|r| r.0).collect::<Vec<_>>(), (1..=10).collect::<Vec<_>>());
    }

    // A step whose read ran and whose change waits for the user: the turn
    // ends on the pending action, its read's result saved with the end.
    let script = vec![Step::Calls(vec![("lookup", json!({"q": "a"})), ("create_task", json!({"title": "t"}))])];
    let rig = Rig::start(db, HostSpec::new(task_tools()), script, &[]).await;
    let events = rig.say("look it up and make a task").await;
    pending(&events);
    let conversation = of(&events, "turn")[0]["conversation_id"].as_str().unwrap().to_owned();
    let rows = saved(&rig, &conversation).await;
    assert_eq!(rows.iter().map(|r| r.1.as_str()).collect::<Vec<_>>(), ["user", "assistant", "tool"], "{rows:?}");
    let calls: Vec<Value> = serde_json::from_str(rows[1].4.as_deref().unwrap()).unwrap();
    assert_eq!(rows[2].3.as_deref(), calls[0]["id"].as_str(), "the lookup's result, not the change's");

    // The reply is refused: the results it would have carried are saved on their own.
    let script = vec![Step::Call("lookup", json!({"q": "a"})), Step::Text("Refused reply.")];
    let rig = Rig::start(db, HostSpec::new(task_tools()), script, &[]).await;
    refuse_replies_starting(&rig.app.state.pool, "Refused").await;
    let events = rig.say("look it up").await;
    assert_eq!(of(&events, "done")[0]["stop_reason"], "completed");
    let conversation = of(&events, "turn")[0]["conversation_id"].as_str().unwrap().to_owned();
    check_transcript(&saved(&rig, &conversation).await, &["user", "assistant", "tool"]);
}
