//! Workspaces and integrations (assistant-api.md §1).

use serde_json::{Value, json};

use crate::helpers::{ADMIN_TOKEN, Db, FakeHost, HOST_SECRET, lookup_tool, spawn_app};

#[tokio::test]
async fn creating_a_workspace_needs_the_admin_token() {
    let app = spawn_app(Db::Sqlite).start().await;
    let body = json!({"name": "Shop", "allowed_origins": ["https://shop.example"]});
    let denied = app.post("/v1/workspaces", "wrong", &body).await;
    assert_eq!(denied.status(), 401);
    let created = app.post("/v1/workspaces", ADMIN_TOKEN, &body).await;
    assert_eq!(created.status(), 201);
    let created: Value = created.json().await.unwrap();
    assert!(created["id"].as_str().unwrap().starts_with("ws_"));
    assert!(created["api_key"].as_str().unwrap().starts_with("cak_"));
    assert_eq!(created["embed_secret"].as_str().unwrap().len(), 64);
    for origin in ["https://shop.example/path", "https://shop*.example", "ftp://shop.example", "https://"] {
        let bad = app.post("/v1/workspaces", ADMIN_TOKEN, &json!({"name": "x", "allowed_origins": [origin]})).await;
        assert_eq!(bad.status(), 400, "{origin}");
    }
    for name in ["", " \u{3000}\t", &"x".repeat(201)] {
        let bad = app.post("/v1/workspaces", ADMIN_TOKEN, &json!({"name": name})).await;
        assert_eq!(bad.status(), 400, "{name:?}");
    }
    let origins = json!(["https://xn--bcher-kva.example:8443", "http://127.0.0.1:3000"]);
    let fine = app.post("/v1/workspaces", ADMIN_TOKEN, &json!({"name": "Bücher", "allowed_origins": origins})).await;
    assert_eq!(fine.status(), 201);
}

#[tokio::test]
async fn connecting_checks_the_hosts_tools_and_secret() {
    let app = spawn_app(Db::Sqlite).start().await;
    let host = FakeHost::start(lookup_tool(), 200, json!({"output": {}})).await;
    let (_, created) = app.post_json("/v1/workspaces", ADMIN_TOKEN, &json!({"name": "Shop"})).await;
    let key = created["api_key"].as_str().unwrap();
    let connect = async |secret: &str| {
        let body = json!({"base_url": host.base_url(), "secret": secret});
        app.post_json("/v1/integrations/generic-rest/connect", key, &body).await
    };
    let (status, _) = connect("wrong-secret").await;
    assert_eq!(status, 502);
    let (status, ok) = connect(HOST_SECRET).await;
    assert_eq!(status, 200);
    assert_eq!(ok["tools"], json!(["lookup"]));
    assert!(ok.get("secret").is_none(), "the secret is never echoed");

    let gone = app.client.delete(app.url("/v1/integrations/generic-rest")).bearer_auth(key).send().await.unwrap();
    assert_eq!(gone.status(), 204);
    let again = app.client.delete(app.url("/v1/integrations/generic-rest")).bearer_auth(key).send().await.unwrap();
    assert_eq!(again.status(), 404);
}

#[tokio::test]
async fn loopback_hosts_are_refused_unless_allowed() {
    let app = spawn_app(Db::Sqlite).env("CA_ALLOW_PRIVATE_TOOL_HOSTS", "0").start().await;
    let created: Value = app.post("/v1/workspaces", ADMIN_TOKEN, &json!({"name": "Shop"})).await.json().await.unwrap();
    let response = app
        .post(
            "/v1/integrations/generic-rest/connect",
            created["api_key"].as_str().unwrap(),
            &json!({"base_url": "http://127.0.0.1:9/tools", "secret": "s"}),
        )
        .await;
    assert_eq!(response.status(), 400);
    let body: Value = response.json().await.unwrap();
    assert!(body["error"].as_str().unwrap().contains("CA_ALLOW_PRIVATE_TOOL_HOSTS"));
}
