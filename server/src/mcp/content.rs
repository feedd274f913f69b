//! What an MCP tool's result (`tools/call`) comes to, read loosely from its
//! JSON: the engine's `output` for a tool call, like a Remote Tools host's.
//!
//! - The model reads `text` (the text blocks, and embedded text resources
//!   with their URI), `links` (each `resource_link` as name and URI) and
//!   `structuredContent` only when there is no text. Blocks whose
//!   `annotations.audience` leaves out the assistant are not sent to it.
//! - The user sees each `resource_link` as a link card under `display`,
//!   sanitized later exactly like a host's cards (http/https only). Images
//!   and audio from a tool are never shown: the model is told one was there.
//! - `_meta`, of the result and of every block, is never kept.
//! - `isError: true` is a failed call whose text the model is told, so it
//!   can correct itself (the MCP spec's intent); the turn goes on.
//! - An MCP App's tool: its `structuredContent` is for the app, never the
//!   model's ([`app_outcome`]).

use serde_json::{Map, Value, json};

/// A tool result, sorted.
#[derive(Debug, PartialEq)]
pub enum Outcome {
    /// The `output` the engine takes (what the model reads, and `display`).
    Output(Value),
    /// `isError`: what the server said went wrong.
    Failed(String),
}

/// Longest text the model is told of a failed call, in characters.
const MAX_ERROR_CHARS: usize = 2000;

/// Sorts a `tools/call` result.
pub fn outcome(result: &Value) -> Outcome {
    outcome_of(result, false)
}

/// Sorts the result of an MCP App's tool: its `structuredContent` is the
/// app's (MCP Apps), so the model reads only the `content`.
pub fn app_outcome(result: &Value) -> Outcome {
    outcome_of(result, true)
}

fn outcome_of(result: &Value, for_app: bool) -> Outcome {
    let blocks: &[Value] = result.get("content").and_then(Value::as_array).map_or(&[], Vec::as_slice);
    let mut texts: Vec<String> = Vec::new();
    let mut links: Vec<Value> = Vec::new();
    let mut display: Vec<Value> = Vec::new();
    for block in blocks {
        let audience: Option<Vec<&str>> = block
            .pointer("/annotations/audience")
            .and_then(Value::as_array)
            .map(|roles| roles.iter().filter_map(Value::as_str).collect());
        let for_model = audience.as_ref().is_none_or(|roles| roles.contains(&"assistant"));
        let for_user = audience.as_ref().is_none_or(|roles| roles.contains(&"user"));
        let text = |key: &str| block.get(key).and_then(Value::as_str);
        match text("type") {
            Some("text") if for_model => texts.extend(text("text").map(str::to_owned)),
            Some("resource_link") => {
                let (Some(uri), name) = (text("uri"), text("name").unwrap_or("")) else { continue };
                if for_model {
                    links.push(json!({ "name": name, "uri": uri }));
                }
                if for_user {
                    let title = text("title").filter(|t| !t.trim().is_empty()).unwrap_or(name);
                    let mut card = Map::new();
                    card.insert("title".into(), json!(if title.trim().is_empty() { uri } else { title }));
                    card.insert("url".into(), json!(uri));
                    if let Some(description) = text("description") {
                        card.insert("subtitle".into(), json!(description));
                    }
                    display.push(Value::Object(card));
                }
            }
            Some("resource") if for_model => {
                let resource = block.get("resource");
                let field = |key: &str| resource.and_then(|r| r.get(key)).and_then(Value::as_str);
                match (field("uri"), field("text")) {
                    (Some(uri), Some(body)) => texts.push(format!("{uri}:\n{body}")),
                    (Some(uri), None) => texts.push(format!("[a resource: {uri}]")),
                    _ => {}
                }
            }
            Some(kind @ ("image" | "audio")) if for_model => {
                let mime = text("mimeType").unwrap_or("unknown");
                texts.push(format!("[{kind} ({mime}), not shown]"));
            }
            _ => {}
        }
    }
    if result.get("isError").and_then(Value::as_bool) == Some(true) {
        let said = texts.join("\n");
        let said = if said.trim().is_empty() { "the tool failed".to_owned() } else { said };
        return Outcome::Failed(said.chars().take(MAX_ERROR_CHARS).collect());
    }
    let mut output = Map::new();
    if !texts.is_empty() {
        output.insert("text".into(), json!(texts.join("\n")));
    } else if let Some(structured) = result.get("structuredContent").filter(|v| !v.is_null() && !for_app) {
        output.insert("structuredContent".into(), strip_meta(structured.clone()));
    }
    if !links.is_empty() {
        output.insert("links".into(), Value::Array(links));
    }
    if !display.is_empty() {
        output.insert("display".into(), Value::Array(display));
    }
    Outcome::Output(Value::Object(output))
}

/// `value` without any `_meta`, at any depth.
fn strip_meta(value: Value) -> Value {
    match value {
        Value::Object(map) => {
            Value::Object(map.into_iter().filter(|(k, _)| k != "_meta").map(|(k, v)| (k, strip_meta(v))).collect())
        }
        Value::Array(items) => Value::Array(items.into_iter().map(strip_meta).collect()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_links_and_what_the_model_must_not_see_are_sorted() {
        let result = json!({
            "_meta": {"secret": "s1"},
            "content": [
                {"type": "text", "text": "Two orders.", "_meta": {"secret": "s2"}},
                {"type": "text", "text": "internal note", "annotations": {"audience": ["user"]}},
                {"type": "resource_link", "uri": "https://shop.example/o/1", "name": "order-1",
                 "title": "Order 1", "description": "Shipped"},
                {"type": "resource_link", "uri": "javascript:alert(1)", "name": "evil"},
                {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
                {"type": "resource", "resource": {"uri": "file:///notes.txt", "text": "kept"}},
                {"type": "hologram", "data": "?"}
            ],
            "structuredContent": {"orders": 2}
        });
        let Outcome::Output(output) = outcome(&result) else { panic!() };
        assert_eq!(output["text"], "Two orders.\n[image (image/png), not shown]\nfile:///notes.txt:\nkept");
        assert!(output.get("structuredContent").is_none(), "text wins over structured content");
        assert_eq!(output["links"][0], json!({"name": "order-1", "uri": "https://shop.example/o/1"}));
        assert_eq!(output["display"][0]["title"], "Order 1");
        assert_eq!(output["display"][0]["subtitle"], "Shipped");
        let text = output.to_string();
        assert!(!text.contains("s1") && !text.contains("s2") && !text.contains("internal note"), "{text}");
        assert!(!text.contains("iVBORw0KGgo"), "the image's bytes go nowhere");
        let cards = crate::display::cards_from_output(&output);
        let urls: Vec<&str> = cards.iter().map(|c| c.url.as_str()).collect();
        assert_eq!(urls, ["https://shop.example/o/1"], "the host's card sanitizer drops javascript:");
    }

    #[test]
    fn structured_content_alone_is_given_without_its_meta() {
        let result = json!({"content": [], "structuredContent": {"total": 3, "_meta": {"x": 1}}});
        assert_eq!(outcome(&result), Outcome::Output(json!({"structuredContent": {"total": 3}})));
    }

    #[test]
    fn an_apps_structured_content_is_the_apps_alone() {
        let result = json!({"content": [], "structuredContent": {"time": "12:00"}});
        assert_eq!(app_outcome(&result), Outcome::Output(json!({})));
        assert_eq!(outcome(&result), Outcome::Output(json!({"structuredContent": {"time": "12:00"}})));
    }

    #[test]
    fn is_error_is_a_failed_call_the_model_hears_about() {
        let result = json!({"isError": true, "content": [{"type": "text", "text": "no such order"}]});
        assert_eq!(outcome(&result), Outcome::Failed("no such order".into()));
        assert_eq!(outcome(&json!({"isError": true})), Outcome::Failed("the tool failed".into()));
    }
}
