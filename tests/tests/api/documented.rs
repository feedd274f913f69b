//! Every answer the tests read through `TestApp`'s JSON helpers is checked
//! against the OpenAPI document the server serves: the status is one the
//! operation describes, and where that answer has a JSON schema, the body
//! fits it. A route whose answers drift from its description fails the test
//! that saw it, naming the route and the difference.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use serde_json::{Value, json};

fn document() -> &'static Value {
    static DOC: OnceLock<Value> = OnceLock::new();
    DOC.get_or_init(server::api::document)
}

/// The document's path template for a concrete `/v1` path (its query
/// dropped), preferring literal segments to `{parameters}`.
fn template_of(path: &str) -> Option<&'static str> {
    let path = path.split('?').next().unwrap_or(path);
    let segments: Vec<&str> = path.trim_end_matches('/').split('/').collect();
    document()["paths"]
        .as_object()?
        .keys()
        .filter_map(|template| {
            let parts: Vec<&str> = template.split('/').collect();
            let fits = parts.len() == segments.len()
                && parts.iter().zip(&segments).all(|(part, segment)| {
                    part == segment || (part.starts_with('{') && part.ends_with('}') && !segment.is_empty())
                });
            fits.then(|| (parts.iter().filter(|p| !p.starts_with('{')).count(), template.as_str()))
        })
        .max()
        .map(|(_, template)| template)
}

/// The body's schema as a document of its own: the `$ref`s into
/// `#/components/schemas` resolve within it.
fn validator(schema: &Value) -> Arc<jsonschema::Validator> {
    static CACHE: OnceLock<Mutex<HashMap<String, Arc<jsonschema::Validator>>>> = OnceLock::new();
    let key = schema.to_string();
    let cache = CACHE.get_or_init(Default::default);
    if let Some(found) = cache.lock().unwrap().get(&key) {
        return found.clone();
    }
    let mut root = json!({ "components": document()["components"] });
    if let (Some(root), Some(schema)) = (root.as_object_mut(), schema.as_object()) {
        root.extend(schema.clone());
    }
    let built = Arc::new(
        jsonschema::options()
            .with_pattern_options(jsonschema::PatternOptions::regex())
            .build(&root)
            .unwrap_or_else(|e| panic!("the document's schema {schema} does not compile: {e}")),
    );
    cache.lock().unwrap().insert(key, built.clone());
    built
}

/// Panics unless `status` and `body` (with its `content_type`) are as the
/// document describes `method path`. Routes outside the document (the
/// demo, the console, Caddie's) are not checked.
pub fn check(method: &str, path: &str, status: u16, content_type: &str, body: &str) {
    let Some(template) = template_of(path) else { return };
    let method = method.to_ascii_lowercase();
    let Some(operation) = document()["paths"][template].get(&method) else {
        // A method the route does not have: the API's 405, an ErrorBody.
        assert_eq!(status, 405, "{method} {path} is not in the document but answered {status}");
        return;
    };
    let responses = &operation["responses"];
    let range = format!("{}XX", status / 100);
    let Some(answer) = [status.to_string(), range, "default".to_owned()].iter().find_map(|key| responses.get(key))
    else {
        panic!("{method} {template} answered {status}, which the document does not describe: {body}");
    };
    let Some(content) = answer.get("content").and_then(Value::as_object) else {
        assert!(body.is_empty(), "{method} {template} {status} is described without a body but sent {body}");
        return;
    };
    let media = content_type.split(';').next().unwrap_or("").trim();
    let Some(described) = content.get(media) else {
        panic!(
            "{method} {template} {status} answered {media:?}; the document describes {:?}",
            content.keys().collect::<Vec<_>>()
        );
    };
    let Some(schema) = described.get("schema") else { return };
    if media != "application/json" {
        return;
    }
    let value: Value = serde_json::from_str(body)
        .unwrap_or_else(|e| panic!("{method} {template} {status} is described as JSON but is not ({e}): {body}"));
    let problems: Vec<String> =
        validator(schema).iter_errors(&value).map(|e| format!("{}: {e}", e.instance_path().as_str())).collect();
    assert!(
        problems.is_empty(),
        "{method} {template} {status} does not fit the document: {}\nbody: {body}",
        problems.join("; ")
    );
}

#[test]
fn paths_find_their_template_literal_segments_first() {
    assert_eq!(template_of("/v1/workspace/conversations?limit=2"), Some("/v1/workspace/conversations"));
    assert_eq!(template_of("/v1/workspace/conversations/conv_1"), Some("/v1/workspace/conversations/{id}"));
    assert_eq!(template_of("/v1/integrations/generic-rest/connect"), Some("/v1/integrations/{provider}/connect"));
    assert_eq!(template_of("/v1/integrations/mcp/connect"), Some("/v1/integrations/mcp/connect"));
    assert_eq!(template_of("/bistro/api/tools"), None);
}

#[test]
#[should_panic(expected = "does not fit the document")]
fn an_answer_that_breaks_its_schema_fails() {
    check("GET", "/v1/workspace/model", 200, "application/json", r#"{"unexpected": true, "base_url": 7}"#);
}

#[test]
#[should_panic(expected = "does not describe")]
fn an_undescribed_status_fails() {
    check("GET", "/v1/workspace", 302, "application/json", "{}");
}

#[test]
fn an_error_answer_is_checked_as_an_error_body() {
    check("GET", "/v1/workspace", 401, "application/json", r#"{"error": "no key", "code": "unauthorized"}"#);
    let broken = std::panic::catch_unwind(|| check("GET", "/v1/workspace", 401, "application/json", r#"{"error": 1}"#));
    assert!(broken.is_err(), "an error without its code does not fit ErrorBody");
}
