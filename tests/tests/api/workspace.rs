//! The workspace's own settings (`GET`/`PATCH /v1/workspace`, api key
//! auth): its name, allowed origins, and limits of its own below the
//! operator's — each change in force at the next request.

use std::time::Duration;

use serde_json::{Value, json};

use crate::helpers::{Db, HostSpec, Rig, ScriptedModel, Step, of, replica, start_of_window, task_tools};
use crate::on_both_databases;

on_both_databases!(
    a_workspace_sets_its_own_turn_limit_and_gives_it_back,
    a_turn_uses_each_change_of_tools_and_model_made_on_another_replica,
);

/// The names of the tools the model was offered in request `n`.
fn offered(model: &ScriptedModel, n: usize) -> Vec<String> {
    let requests = model.requests.lock().unwrap();
    let mut names: Vec<String> = requests[n]["tools"]
        .as_array()
        .map(|tools| tools.iter().map(|t| t["function"]["name"].as_str().unwrap().to_owned()).collect())
        .unwrap_or_default();
    names.sort();
    names
}

/// A replica keeps the sources and model it opened for a turn while the
/// workspace's setup stays the same; every change made through another
/// replica is in force at this one's next turn.
async fn a_turn_uses_each_change_of_tools_and_model_made_on_another_replica(db: Db) {
    let private = [("CA_ALLOW_PRIVATE_MODEL_HOSTS", "1")];
    let rig = Rig::start(db, HostSpec::new(task_tools()), vec![Step::Text("hi")], &private).await;
    let (other, _) = replica(&rig.app, &[("CA_ALLOW_PRIVATE_MODEL_HOSTS", "1".into())]).await;
    let on_other = |method: reqwest::Method, path: &str| {
        rig.app.client.request(method, format!("http://{other}{path}")).bearer_auth(&rig.api_key)
    };
    let asked = || rig.model.requests.lock().unwrap().len();
    let all = ["create_task", "delete_project", "lookup", "update_task"];
    for _ in 0..2 {
        assert_eq!(of(&rig.say("hello").await, "done")[0]["stop_reason"], "completed");
        assert_eq!(offered(&rig.model, asked() - 1), all);
    }

    // Narrowed on the other replica.
    let narrow = json!({"allowed_tools": ["lookup"]});
    let response = on_other(reqwest::Method::PATCH, "/v1/integrations/generic-rest").json(&narrow).send().await;
    assert_eq!(response.unwrap().status(), 200);
    rig.say("hello").await;
    assert_eq!(offered(&rig.model, asked() - 1), ["lookup"]);

    // Removed there.
    let response = on_other(reqwest::Method::DELETE, "/v1/integrations/generic-rest").send().await;
    assert_eq!(response.unwrap().status(), 204);
    rig.say("hello").await;
    assert_eq!(offered(&rig.model, asked() - 1), Vec::<String>::new());

    // Connected again there, to another host.
    let moved = HostSpec::new(task_tools()).start().await;
    let connect = json!({"base_url": moved.base_url(), "secret": crate::helpers::HOST_SECRET});
    let response = on_other(reqwest::Method::POST, "/v1/integrations/generic-rest/connect").json(&connect).send().await;
    assert_eq!(response.unwrap().status(), 200);
    let listed = moved.count("tools");
    rig.say("hello").await;
    assert_eq!(offered(&rig.model, asked() - 1), all);
    assert_eq!(moved.count("tools"), listed + 1, "the turn listed the new host's tools");

    // Its own model, set there: this replica's next turn asks it; removed
    // there: the server's model again.
    let own_model = ScriptedModel::start(vec![Step::Text("from the workspace's model")]).await;
    let own = json!({"base_url": own_model.base_url(), "api_key": "sk-own", "model": "own"});
    let response = on_other(reqwest::Method::PUT, "/v1/workspace/model").json(&own).send().await;
    assert_eq!(response.unwrap().status(), 200);
    let said = rig.say("hello").await;
    assert_eq!(of(&said, "message")[0]["text"], "from the workspace's model");
    let own_asked = own_model.requests.lock().unwrap().len();
    let response = on_other(reqwest::Method::DELETE, "/v1/workspace/model").send().await;
    assert!(response.unwrap().status().is_success());
    let said = rig.say("hello").await;
    assert_eq!(of(&said, "message")[0]["text"], "hi");
    assert_eq!(own_model.requests.lock().unwrap().len(), own_asked, "the removed model is not asked");
}

async fn a_workspace_sets_its_own_turn_limit_and_gives_it_back(db: Db) {
    let rig = Rig::start(db, HostSpec::new(task_tools()), vec![Step::Text("hi")], &[]).await;

    let (status, shown) =
        rig.app.patch_json("/v1/workspace", &rig.api_key, &json!({"limits": {"turns_per_user_per_minute": 2}})).await;

    assert_eq!(status, 200, "{shown}");
    assert_eq!(shown["limits"]["turns_per_user_per_minute"], 2);
    assert_eq!(shown["limits"]["daily_tokens"], Value::Null, "untouched: the operator's");
    assert_eq!(shown["effective_limits"]["turns_per_user_per_minute"], 2);
    start_of_window(&rig.app.clock, 60_000);
    for _ in 0..2 {
        assert_eq!(of(&rig.say("hello").await, "done")[0]["stop_reason"], "completed");
    }
    let refused = rig.app.post("/v1/chat/turns", &rig.token, &json!({"message": "hello"})).await;
    assert_eq!(refused.status(), 429, "the workspace's own limit holds at once");

    // null gives the limit back to the operator's.
    let (status, shown) = rig
        .app
        .patch_json("/v1/workspace", &rig.api_key, &json!({"limits": {"turns_per_user_per_minute": null}}))
        .await;
    assert_eq!(status, 200, "{shown}");
    assert_eq!(shown["limits"]["turns_per_user_per_minute"], Value::Null);
    let operators = rig.app.state.api.limits.config.turns_per_user;
    assert_eq!(shown["effective_limits"]["turns_per_user_per_minute"], operators);
    assert_eq!(of(&rig.say("hello").await, "done")[0]["stop_reason"], "completed");
}

#[tokio::test]
async fn malformed_limits_are_refused_and_change_nothing() {
    let operator = [("CA_TURNS_PER_USER_PER_MINUTE", "5"), ("CA_USER_DAILY_TOKENS", "0")];
    let rig = Rig::start(Db::Sqlite, HostSpec::new(task_tools()), vec![Step::Text("hi")], &operator).await;
    let (_, before) = rig.app.get_json("/v1/workspace", &rig.api_key).await;
    assert_eq!(before["effective_limits"]["turns_per_user_per_minute"], 5);
    assert_eq!(before["effective_limits"]["user_daily_tokens"], Value::Null, "no budget");
    assert!(before.get("api_key").is_none() && before.get("embed_secret").is_none(), "{before}");

    let refusals = [
        (json!({"limits": {"turns_per_user_per_minute": 0}}), "from 1"),
        (json!({"limits": {"daily_tokens": 1_000_000_000_001_u64}}), "from 1 to 1000000000000"),
        (json!({"limits": [7]}), "limits"),
        (json!(["Renamed"]), "a JSON object"),
        (json!({"limits": {"turns_per_user_per_minute": -1}}), "turns_per_user_per_minute"),
        (json!({"limits": {"turns_per_user_per_minute": "3"}}), "turns_per_user_per_minute"),
        (json!({"limits": {"turns_per_user_per_minute": 2.5}}), "not a whole number"),
        (json!({"limits": {"turns_per_minute": 3}}), "turns_per_minute"),
        (json!({"limits": null, "secret": "x"}), "secret"),
        (json!({"name": "  "}), "name"),
        (json!({"allowed_origins": ["https://shop.example/path"]}), "allowed_origins"),
        (json!({"allowed_origins": "https://shop.example"}), "allowed_origins"),
    ];
    for (patch, named) in refusals {
        let (status, body) = rig.app.patch_json("/v1/workspace", &rig.api_key, &patch).await;
        assert_eq!(status, 400, "{patch}: {body}");
        assert_eq!(body["code"], "bad_request");
        assert!(body["error"].as_str().unwrap().contains(named), "{patch}: {body}");
    }
    let (_, after) = rig.app.get_json("/v1/workspace", &rig.api_key).await;
    assert_eq!(after, before, "nothing changed");

    // Above the operator's: kept, but the operator's holds.
    let (status, shown) =
        rig.app.patch_json("/v1/workspace", &rig.api_key, &json!({"limits": {"turns_per_user_per_minute": 6}})).await;
    assert_eq!(status, 200, "{shown}");
    assert_eq!(shown["limits"]["turns_per_user_per_minute"], 6);
    assert_eq!(shown["effective_limits"]["turns_per_user_per_minute"], 5);

    // Only the workspace's api key: not an embed token, not another key.
    for bearer in [rig.token.as_str(), "ca_key_not_a_real_one", ""] {
        let (status, _) = rig.app.patch_json("/v1/workspace", bearer, &json!({"name": "Taken"})).await;
        assert_eq!(status, 401);
        assert_eq!(rig.app.get_json("/v1/workspace", bearer).await.0, 401);
    }
}

#[tokio::test]
async fn a_workspaces_own_daily_tokens_hold_where_the_operator_sets_no_budget() {
    // Each model step reports 50 tokens of usage; the operator sets no budget.
    let rig = Rig::start(
        Db::Sqlite,
        HostSpec::new(task_tools()),
        vec![Step::Text("hi")],
        &[("CA_WORKSPACE_DAILY_TOKENS", "0")],
    )
    .await;
    let (status, shown) =
        // 60.0: a whole number as JSON Schema allows it.
        rig.app.patch_json("/v1/workspace", &rig.api_key, &json!({"limits": {"daily_tokens": 60.0}})).await;
    assert_eq!(status, 200, "{shown}");
    assert_eq!(shown["effective_limits"]["daily_tokens"], 60);
    start_of_window(&rig.app.clock, 86_400_000);

    for _ in 0..2 {
        assert_eq!(of(&rig.say("hello").await, "done")[0]["stop_reason"], "completed");
    }
    assert_eq!(of(&rig.say("hello").await, "done")[0]["stop_reason"], "budget_exhausted");

    rig.app.clock.advance(Duration::from_secs(86_400));
    assert_eq!(of(&rig.say("hello").await, "done")[0]["stop_reason"], "completed", "a new day");
}

#[tokio::test]
async fn a_new_name_and_origins_are_shown_and_the_widget_page_follows_them() {
    let rig = Rig::start(Db::Sqlite, HostSpec::new(task_tools()), vec![Step::Text("hi")], &[]).await;
    let frame_ancestors = || async {
        let page = rig.app.client.get(rig.app.url(&format!("/widget?ws={}", rig.workspace))).send().await.unwrap();
        assert_eq!(page.status(), 200);
        let csp = page.headers()["content-security-policy"].to_str().unwrap().to_owned();
        csp.split(';').find(|d| d.trim().starts_with("frame-ancestors")).unwrap().trim().to_owned()
    };
    assert!(frame_ancestors().await.contains("https://shop.example"));

    let patch = json!({"name": " Corner Shop ", "allowed_origins": ["https://new.example", "http://127.0.0.1:8080"]});
    let (status, shown) = rig.app.patch_json("/v1/workspace", &rig.api_key, &patch).await;

    assert_eq!(status, 200, "{shown}");
    assert_eq!(shown["name"], "Corner Shop");
    assert_eq!(shown["allowed_origins"], json!(["https://new.example", "http://127.0.0.1:8080"]));
    assert_eq!(rig.app.get_json("/v1/workspace", &rig.api_key).await.1, shown);
    let ancestors = frame_ancestors().await;
    assert!(ancestors.contains("https://new.example") && ancestors.contains("http://127.0.0.1:8080"), "{ancestors}");
    assert!(!ancestors.contains("https://shop.example"), "the old origin may frame it no more: {ancestors}");
    // A chat call from the old origin is refused; from the new one it goes.
    let from = |origin: &'static str| {
        rig.app.client.get(rig.app.url("/v1/conversations")).bearer_auth(&rig.token).header("origin", origin).send()
    };
    assert_eq!(from("https://shop.example").await.unwrap().status(), 403);
    assert_eq!(from("https://new.example").await.unwrap().status(), 200);
}

on_both_databases!(
    conversations_past_the_workspaces_retention_are_deleted_and_none_sooner,
    the_workspace_theme_is_the_widgets_default_and_bad_values_change_nothing,
);

async fn conversations_past_the_workspaces_retention_are_deleted_and_none_sooner(db: Db) {
    let rig = Rig::start(db, HostSpec::new(task_tools()), vec![Step::Text("hi")], &[]).await;
    let said = rig.say("remember this").await;
    let conversation = of(&said, "turn")[0]["conversation_id"].as_str().unwrap().to_owned();
    let turn = of(&said, "turn")[0]["turn_id"].as_str().unwrap().to_owned();
    crate::helpers::events_stored(&rig.app, &turn).await;
    let pool = &rig.app.state.pool;
    let listed = || async { rig.app.get_json("/v1/conversations", &rig.token).await.1["conversations"].clone() };
    let two_days = Duration::from_secs(2 * 24 * 3600);

    // Kept by default, however old.
    rig.app.clock.advance(two_days);
    server::retention::sweep(pool, &rig.app.clock, &rig.app.state.api.attachments, None).await.unwrap();
    assert_eq!(listed().await.as_array().unwrap().len(), 1);

    let (status, shown) = rig.app.patch_json("/v1/workspace", &rig.api_key, &json!({"retention_days": 3})).await;
    assert_eq!((status, shown["retention_days"].clone()), (200, json!(3)));
    server::retention::sweep(pool, &rig.app.clock, &rig.app.state.api.attachments, None).await.unwrap();
    assert_eq!(listed().await.as_array().unwrap().len(), 1, "two days old, three kept");

    rig.app.clock.advance(two_days);
    server::retention::sweep(pool, &rig.app.clock, &rig.app.state.api.attachments, None).await.unwrap();
    assert_eq!(listed().await, json!([]));
    let count = |sql: &'static str, id: String| async move {
        let (n,): (i64,) = sqlx::query_as(sql).bind(id).fetch_one(pool).await.unwrap();
        n
    };
    assert_eq!(count("SELECT COUNT(*) FROM messages WHERE conversation_id = $1", conversation.clone()).await, 0);
    assert_eq!(count("SELECT COUNT(*) FROM turns WHERE conversation_id = $1", conversation).await, 0);
    assert_eq!(count("SELECT COUNT(*) FROM turn_events WHERE turn_id = $1", turn).await, 0, "its stream too");

    // The audit trail keeps what it is told to.
    server::retention::sweep(pool, &rig.app.clock, &rig.app.state.api.attachments, Some(30)).await.unwrap();
    let (_, trail) = rig.app.get_json("/v1/audit", &rig.api_key).await;
    assert!(!trail["items"].as_array().unwrap().is_empty(), "entries four days old stay under 30 days");
    rig.app.clock.advance(Duration::from_secs(40 * 24 * 3600));
    server::retention::sweep(pool, &rig.app.clock, &rig.app.state.api.attachments, Some(30)).await.unwrap();
    let (_, trail) = rig.app.get_json("/v1/audit", &rig.api_key).await;
    assert_eq!(trail["items"], json!([]));
}

async fn the_workspace_theme_is_the_widgets_default_and_bad_values_change_nothing(db: Db) {
    let rig = Rig::start(db, HostSpec::new(task_tools()), vec![Step::Text("hi")], &[]).await;
    let theme = json!({"mode": "dark", "accent": "#aa3300", "radius": 4, "font": "Inter, sans-serif"});
    let (status, shown) = rig.app.patch_json("/v1/workspace", &rig.api_key, &json!({"theme": theme})).await;
    assert_eq!(status, 200, "{shown}");
    assert_eq!(shown["theme"], theme);

    let page = |query: &str| {
        let url = rig.app.url(&format!("/widget?ws={}{query}", rig.workspace));
        async move { reqwest::get(url).await.unwrap().text().await.unwrap() }
    };
    let html = page("").await;
    assert!(html.contains("data-theme=\"dark\""), "the workspace's mode");
    assert!(html.contains("--ca-accent:#aa3300;--ca-radius:4px;"), "{html}");
    let html = page("&theme=light&accent=%23112233").await;
    assert!(
        html.contains("data-theme=\"light\"") && html.contains("--ca-accent:#112233;--ca-radius:4px;"),
        "the page's own win"
    );

    for bad in [
        json!({"theme": {"mode": "blue"}}),
        json!({"theme": {"accent": "red"}}),
        json!({"theme": {"radius": 99}}),
        json!({"theme": {"font": "x;}</style>"}}),
        json!({"theme": {"colour": "red"}}),
        json!({"theme": "dark"}),
        json!({"retention_days": 0}),
        json!({"retention_days": 3651}),
        json!({"retention_days": "7"}),
    ] {
        let (status, answer) = rig.app.patch_json("/v1/workspace", &rig.api_key, &bad).await;
        assert_eq!((status, answer["code"].as_str()), (400, Some("bad_request")), "{bad}: {answer}");
    }
    let (_, after) = rig.app.get_json("/v1/workspace", &rig.api_key).await;
    assert_eq!(after["theme"], theme);
    assert_eq!(after["retention_days"], Value::Null);
    let (status, cleared) = rig.app.patch_json("/v1/workspace", &rig.api_key, &json!({"theme": {}})).await;
    assert_eq!(
        (status, cleared["theme"].clone()),
        (200, json!({"mode": null, "accent": null, "radius": null, "font": null}))
    );
}
