//! The host's view of its setup (api key auth): its integration listed,
//! shown without its secret and narrowed, and every setup change in the
//! audit trail, read newest first with filters, cursors and a JSON Lines
//! export — never a secret in it, never another workspace's entries.

use serde_json::{Value, json};

use crate::helpers::{ADMIN_TOKEN, Db, HOST_SECRET, HostSpec, Rig, Step, pending, task_tools};
use crate::on_both_databases;

on_both_databases!(
    setup_changes_are_in_the_trail_newest_first_with_filters_cursors_and_an_export,
    each_pending_actions_life_is_in_the_trail_with_its_user_tool_and_outcome,
    the_integration_is_listed_shown_without_its_secret_narrowed_and_disconnected,
    bad_audit_queries_are_refused,
);

async fn actions(rig: &Rig, query: &str) -> (Vec<String>, Value) {
    let (status, page) = rig.app.get_json(&format!("/v1/audit{query}"), &rig.api_key).await;
    assert_eq!(status, 200, "{page}");
    let names = page["items"].as_array().unwrap().iter().map(|i| i["action"].as_str().unwrap().to_owned()).collect();
    (names, page)
}

async fn setup_changes_are_in_the_trail_newest_first_with_filters_cursors_and_an_export(db: Db) {
    let rig = Rig::start(db, HostSpec::new(task_tools()), vec![Step::Text("hi")], &[]).await;
    let patch =
        json!({"name": "Renamed shop", "allowed_origins": ["https://shop.example", "https://www.shop.example"]});
    assert_eq!(rig.app.patch_json("/v1/workspace", &rig.api_key, &patch).await.0, 200);
    let narrow = json!({"allowed_tools": ["lookup"]});
    let (status, shown) = rig.app.patch_json("/v1/integrations/generic-rest", &rig.api_key, &narrow).await;
    assert_eq!(status, 200, "{shown}");
    assert_eq!(shown["allowed_tools"], json!(["lookup"]));
    let (status, rotated) = rig.app.post_json("/v1/workspace/embed-secret/rotate", &rig.api_key, &json!({})).await;
    assert_eq!(status, 200);

    let (names, page) = actions(&rig, "").await;

    assert_eq!(names, ["embed_secret.rotated", "integration.updated", "workspace.updated", "integration.connected"]);
    assert_eq!(page["next_cursor"], Value::Null);
    let items = page["items"].as_array().unwrap();
    assert!(items.iter().all(|i| i["actor"] == "api-key" && i["at"].as_str().is_some_and(|t| t.ends_with('Z'))));
    assert_eq!(items[2]["detail"]["name"], json!({"from": "Shop", "to": "Renamed shop"}));
    assert_eq!(items[2]["detail"]["allowed_origins"]["to"][1], "https://www.shop.example");
    assert!(items[2]["detail"].get("limits").is_none(), "only what changed");
    assert_eq!(items[1]["detail"]["allowed_tools"], json!({"from": [], "to": ["lookup"]}));
    let text = page.to_string();
    for secret in [HOST_SECRET, rig.api_key.as_str(), rig.secret.as_str(), rotated["embed_secret"].as_str().unwrap()] {
        assert!(!text.contains(secret), "no secret in the trail");
    }

    // A page at a time.
    let (first, page) = actions(&rig, "?limit=3").await;
    assert_eq!(first.len(), 3);
    let cursor = page["next_cursor"].as_str().unwrap().to_owned();
    let (rest, page) = actions(&rig, &format!("?limit=3&cursor={cursor}")).await;
    assert_eq!(rest, ["integration.connected"]);
    assert_eq!(page["next_cursor"], Value::Null);
    // Filters.
    assert_eq!(actions(&rig, "?action=workspace.updated").await.0, ["workspace.updated"]);
    assert!(actions(&rig, "?since=2999-01-01T00:00:00Z").await.0.is_empty());
    assert!(actions(&rig, "?until=2000-01-01T00:00:00Z").await.0.is_empty());
    assert_eq!(actions(&rig, "?since=2000-01-01T00:00:00%2B02:00&limit=10").await.0.len(), 4);
    assert!(actions(&rig, "?user=someone").await.0.is_empty());

    // The export: every entry, one JSON object per line, in the same order.
    let export = crate::helpers::http()
        .get(rig.app.url("/v1/audit"))
        .bearer_auth(&rig.api_key)
        .header("accept", "application/jsonl")
        .send()
        .await
        .unwrap();
    assert_eq!(export.status(), 200);
    assert_eq!(export.headers()["content-type"], "application/jsonl");
    let body = export.text().await.unwrap();
    let lines: Vec<Value> = body.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(
        lines.iter().map(|l| l["id"].clone()).collect::<Vec<_>>(),
        items.iter().map(|i| i["id"].clone()).collect::<Vec<_>>()
    );

    // Another workspace's changes are its own.
    let (_, other) = rig.app.post_json("/v1/workspaces", ADMIN_TOKEN, &json!({"name": "Other"})).await;
    let other_key = other["api_key"].as_str().unwrap();
    assert_eq!(rig.app.patch_json("/v1/workspace", other_key, &json!({"name": "Other 2"})).await.0, 200);
    assert_eq!(actions(&rig, "").await.0.len(), 4);
    let (_, theirs) = rig.app.get_json("/v1/audit", other_key).await;
    assert_eq!(theirs["items"].as_array().unwrap().len(), 1);
}

async fn bad_audit_queries_are_refused(db: Db) {
    let rig = Rig::start(db, HostSpec::new(task_tools()), vec![Step::Text("hi")], &[]).await;
    for query in [
        "?cursor=zzz",
        "?cursor=OjE",
        "?since=yesterday",
        "?until=2026-13-01T00:00:00Z",
        "?limit=0",
        "?limit=1001",
        "?limit=ten",
        "?colour=red",
        "?user=",
    ] {
        let (status, answer) = rig.app.get_json(&format!("/v1/audit{query}"), &rig.api_key).await;
        assert_eq!((status, answer["code"].as_str()), (400, Some("bad_request")), "{query}: {answer}");
    }
    assert_eq!(rig.app.get("/v1/audit", "cak_nobody").await.status(), 401);
}

async fn the_integration_is_listed_shown_without_its_secret_narrowed_and_disconnected(db: Db) {
    let rig = Rig::start(db, HostSpec::new(task_tools()), vec![Step::Text("hi")], &[]).await;
    let (status, list) = rig.app.get_json("/v1/integrations", &rig.api_key).await;
    assert_eq!(status, 200);
    let shown = &list["integrations"][0];
    assert_eq!(shown["provider"], "generic-rest");
    assert_eq!(shown["base_url"].as_str().unwrap().trim_end_matches('/'), rig.host.base_url());
    assert_eq!(shown["allowed_tools"], json!([]));
    assert_eq!(shown["preset"], Value::Null);
    assert!(!list.to_string().contains(HOST_SECRET) && shown.get("secret").is_none());
    let (status, one) = rig.app.get_json("/v1/integrations/generic-rest", &rig.api_key).await;
    assert_eq!((status, &one), (200, shown));
    assert_eq!(rig.app.get("/v1/integrations/other-provider", &rig.api_key).await.status(), 404);

    for bad in [
        json!({"allowed_tools": ["look up"]}),
        json!({"allowed_tools": ["lookup", "lookup"]}),
        json!({"allowed_tools": [""]}),
        json!({"allowed_tools": "lookup"}),
        json!({"tools": ["lookup"]}),
    ] {
        let (status, answer) = rig.app.patch_json("/v1/integrations/generic-rest", &rig.api_key, &bad).await;
        assert_eq!((status, answer["code"].as_str()), (400, Some("bad_request")), "{bad}");
    }
    let (_, unchanged) = rig.app.get_json("/v1/integrations/generic-rest", &rig.api_key).await;
    assert_eq!(unchanged["allowed_tools"], json!([]));

    // Narrowed while the tool server is down: no call to it is needed.
    let before = rig.host.count("tools");
    let (status, _) =
        rig.app.patch_json("/v1/integrations/generic-rest", &rig.api_key, &json!({"allowed_tools": ["lookup"]})).await;
    assert_eq!(status, 200);
    assert_eq!(rig.host.count("tools"), before);

    let gone = crate::helpers::http()
        .delete(rig.app.url("/v1/integrations/generic-rest"))
        .bearer_auth(&rig.api_key)
        .send()
        .await
        .unwrap();
    assert_eq!(gone.status(), 204);
    let (_, list) = rig.app.get_json("/v1/integrations", &rig.api_key).await;
    assert_eq!(list["integrations"], json!([]));
    assert_eq!(rig.app.get("/v1/integrations/generic-rest", &rig.api_key).await.status(), 404);
    let (_, trail) = rig.app.get_json("/v1/audit?action=integration.disconnected", &rig.api_key).await;
    assert_eq!(trail["items"].as_array().unwrap().len(), 1);
}

async fn each_pending_actions_life_is_in_the_trail_with_its_user_tool_and_outcome(db: Db) {
    let script = vec![
        Step::Call("delete_project", json!({})),
        Step::Text("Deleted."),
        Step::Call("create_task", json!({"title": "Ship it"})),
        Step::Text("Fine."),
    ];
    let rig = Rig::start(db, HostSpec::new(task_tools()), script, &[]).await;
    let delete = pending(&rig.say("delete the project").await)["action_id"].as_str().unwrap().to_owned();
    assert_eq!(rig.act(&delete, "confirm", None).await.0, 200);
    assert_eq!(rig.act(&delete, "apply", None).await.0, 200);
    let create = pending(&rig.say("create a task").await)["action_id"].as_str().unwrap().to_owned();
    assert_eq!(rig.act(&create, "cancel", Some(json!({"reason": "not now"}))).await.0, 200);

    let (names, page) = actions(&rig, "?user=user_42").await;

    assert_eq!(
        names,
        [
            "action.cancelled",
            "action.previewed",
            "action.executed",
            "action.applied",
            "action.confirmed",
            "action.previewed"
        ]
    );
    let items = page["items"].as_array().unwrap();
    assert!(items.iter().all(|i| i["user"] == "user_42"));
    assert_eq!(items[0]["tool"], "create_task");
    assert_eq!(items[0]["detail"]["reason"], "not now");
    assert_eq!(items[0]["actor"], "user:user_42");
    assert_eq!(items[1]["detail"]["arguments"], json!({"title": "Ship it"}), "the frozen arguments");
    assert_eq!(items[1]["detail"]["preview"], "Create the task “Ship it”");
    assert_eq!(items[1]["actor"], "assistant");
    assert_eq!(items[2]["outcome"], "succeeded");
    assert_eq!(items[2]["tool"], "delete_project");
    assert!(items[2]["detail"]["duration_ms"].is_u64());
    assert_eq!(items[2]["detail"]["action_id"], delete.as_str());
    // Filters by tool and outcome.
    let (by_tool, _) = actions(&rig, "?tool=delete_project").await;
    assert_eq!(by_tool, ["action.executed", "action.applied", "action.confirmed", "action.previewed"]);
    assert_eq!(actions(&rig, "?outcome=succeeded").await.0, ["action.executed"]);
    assert!(actions(&rig, "?user=someone-else").await.0.is_empty());
}
