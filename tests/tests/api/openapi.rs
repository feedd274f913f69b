//! The API's OpenAPI document: served, complete, and true to the routes
//! (the property-based run against it is tests/api-fuzz/run.sh).

use serde_json::Value;
use widget::wire::EventKind;

use crate::helpers::{Db, spawn_app};

/// Every `/v1` operation: (method, path, credential).
const OPERATIONS: &[(&str, &str, &str)] = &[
    ("post", "/v1/workspaces", "admin"),
    ("get", "/v1/workspaces", "admin"),
    ("post", "/v1/integrations/{provider}/connect", "api_key"),
    ("post", "/v1/integrations/{provider}/check", "api_key"),
    ("post", "/v1/integrations/mcp/connect", "api_key"),
    ("post", "/v1/integrations/mcp/check", "api_key"),
    ("delete", "/v1/integrations/{provider}", "api_key"),
    ("get", "/v1/integrations", "api_key"),
    ("post", "/v1/knowledge/sources", "api_key"),
    ("get", "/v1/knowledge/sources", "api_key"),
    ("get", "/v1/knowledge/sources/{id}", "api_key"),
    ("delete", "/v1/knowledge/sources/{id}", "api_key"),
    ("post", "/v1/knowledge/sources/{id}/sync", "api_key"),
    ("get", "/v1/knowledge/sources/{id}/pages", "api_key"),
    ("post", "/v1/knowledge/search", "api_key"),
    ("get", "/v1/knowledge/gaps", "api_key"),
    ("post", "/v1/knowledge/files", "api_key"),
    ("post", "/v1/tests/runs", "api_key"),
    ("get", "/v1/tests/runs", "api_key"),
    ("get", "/v1/tests/runs/{id}", "api_key"),
    ("get", "/v1/tests/runs/{id}/events", "api_key"),
    ("get", "/v1/tests/runs/{id}/junit", "api_key"),
    ("get", "/v1/workspace/conversations/{id}/suite", "api_key"),
    ("get", "/v1/integrations/{provider}", "api_key"),
    ("patch", "/v1/integrations/{provider}", "api_key"),
    ("get", "/v1/audit", "api_key"),
    ("delete", "/v1/users/{external_user_id}", "api_key"),
    ("get", "/v1/tool-presets", "admin"),
    ("put", "/v1/tool-presets/{name}", "admin"),
    ("delete", "/v1/tool-presets/{name}", "admin"),
    ("get", "/v1/workspace", "api_key"),
    ("patch", "/v1/workspace", "api_key"),
    ("post", "/v1/workspace/embed-secret/rotate", "api_key"),
    ("post", "/v1/workspace/api-key/rotate", "api_key"),
    ("get", "/v1/workspace/conversations", "api_key"),
    ("get", "/v1/workspace/conversations/{id}", "api_key"),
    ("get", "/v1/workspace/usage", "api_key"),
    ("get", "/v1/workspace/feedback", "api_key"),
    ("get", "/v1/workspace/model", "api_key"),
    ("put", "/v1/workspace/model", "api_key"),
    ("delete", "/v1/workspace/model", "api_key"),
    ("post", "/v1/chat/turns", "embed_token"),
    ("post", "/v1/attachments", "embed_token"),
    ("get", "/v1/attachments/{id}/content", "embed_token"),
    ("delete", "/v1/attachments/{id}", "embed_token"),
    ("post", "/v1/turns/{turn_id}/stop", "embed_token"),
    ("get", "/v1/turns/{turn_id}/events", "embed_token"),
    ("get", "/v1/conversations", "embed_token"),
    ("get", "/v1/conversations/{id}", "embed_token"),
    ("put", "/v1/messages/{id}/feedback", "embed_token"),
    ("delete", "/v1/messages/{id}/feedback", "embed_token"),
    ("post", "/v1/actions/{id}/confirm", "embed_token"),
    ("post", "/v1/actions/{id}/apply", "embed_token"),
    ("post", "/v1/actions/{id}/cancel", "embed_token"),
    ("post", "/v1/components/{id}/call", "embed_token"),
    ("post", "/v1/elicitations/{id}", "embed_token"),
    ("get", "/v1/apps/{id}", "app_token"),
    ("post", "/v1/apps/{id}/requests", "app_token"),
    ("post", "/v1/apps/{id}/actions/{action_id}/confirm", "app_token"),
    ("post", "/v1/apps/{id}/actions/{action_id}/apply", "app_token"),
    ("post", "/v1/apps/{id}/actions/{action_id}/cancel", "app_token"),
];

#[tokio::test]
async fn the_document_describes_every_route_its_credential_and_its_errors() {
    let app = spawn_app(Db::Sqlite).start().await;
    let response = reqwest::get(app.url("/v1/openapi.json")).await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "application/json");
    let doc: Value = response.json().await.unwrap();
    assert_eq!(doc["openapi"], "3.1.0");
    assert_eq!(doc, server::api::document(), "served as generated");

    let mut described = Vec::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for method in item.as_object().unwrap().keys() {
            described.push((method.clone(), path.clone()));
        }
    }
    let mut expected: Vec<(String, String)> =
        OPERATIONS.iter().map(|(m, p, _)| ((*m).to_owned(), (*p).to_owned())).collect();
    described.sort();
    expected.sort();
    assert_eq!(described, expected);

    for (method, path, credential) in OPERATIONS {
        let operation = &doc["paths"][path][method];
        assert_eq!(operation["security"][0].as_object().unwrap().keys().collect::<Vec<_>>(), [credential], "{path}");
        for range in ["4XX", "5XX"] {
            let schema = &operation["responses"][range]["content"]["application/json"]["schema"]["$ref"];
            assert_eq!(schema, "#/components/schemas/ErrorBody", "{method} {path} {range}");
        }
        assert!(operation["summary"].is_string(), "{method} {path} has a summary");
        for (status, answer) in operation["responses"].as_object().unwrap() {
            // OpenAPI 3.1 requires it; client generators and validators refuse a document without.
            let described = answer["description"].as_str().is_some_and(|d| !d.trim().is_empty());
            assert!(described, "{method} {path} {status} has a description");
        }
    }
    let error = &doc["components"]["schemas"]["ErrorBody"];
    assert_eq!(error["required"], serde_json::json!(["error", "code"]));
    for scheme in ["admin", "api_key", "embed_token"] {
        assert_eq!(doc["components"]["securitySchemes"][scheme]["scheme"], "bearer");
    }
}

#[tokio::test]
async fn the_turn_stream_is_described_event_by_event() {
    let doc = server::api::document();
    let streams = [
        ("post", "/v1/chat/turns"),
        ("post", "/v1/actions/{id}/apply"),
        ("post", "/v1/actions/{id}/cancel"),
        ("get", "/v1/turns/{turn_id}/events"),
    ];
    for (method, path) in streams {
        let stream = &doc["paths"][path][method]["responses"]["200"]["content"]["text/event-stream"];
        assert_eq!(stream["schema"]["$ref"], "#/components/schemas/TurnStreamEvent", "{path} streams turn events");
    }
    let schemas = &doc["components"]["schemas"];
    let events = schemas["TurnStreamEvent"]["oneOf"].as_array().unwrap();
    let names: Vec<&str> = events.iter().map(|e| e["properties"]["event"]["const"].as_str().unwrap()).collect();
    let kinds: Vec<&str> = EventKind::ALL.iter().map(|k| k.as_str()).collect();
    assert_eq!(names, kinds, "one described event per event the engine sends");
    for event in events {
        let data = &event["properties"]["data"];
        assert_eq!(data["contentMediaType"], "application/json");
        let name = data["contentSchema"]["$ref"].as_str().unwrap().trim_start_matches("#/components/schemas/");
        assert!(schemas[name]["properties"].is_object(), "{name} is described");
    }
    assert_eq!(schemas["TurnDone"]["required"], serde_json::json!(["stop_reason"]));
}

#[tokio::test]
async fn an_unknown_path_or_method_answers_a_json_error() {
    let app = spawn_app(Db::Sqlite).start().await;
    let client = crate::helpers::http();

    let missing = client.get(app.url("/v1/nothing/here")).send().await.unwrap();
    assert_eq!(missing.status(), 404);
    let body: Value = missing.json().await.unwrap();
    assert_eq!(body["code"], "not_found");

    let wrong = client.put(app.url("/v1/workspaces")).send().await.unwrap();
    assert_eq!(wrong.status(), 405);
    let allowed: Vec<&str> = wrong.headers()["allow"].to_str().unwrap().split(',').map(str::trim).collect();
    assert!(allowed.contains(&"POST") && allowed.contains(&"GET"), "{allowed:?}");
    let body: Value = wrong.json().await.unwrap();
    assert_eq!((body["code"].as_str(), body["error"].is_string()), (Some("method_not_allowed"), true));
}
