//! The chat-completions request, as every provider accepts it: tool
//! schemas normalized (an `inputSchema` of `{}`, `null` or without
//! `"type": "object"` becomes an object schema), tool names mapped to the
//! strictest rule providers share and back, and each assistant tool call
//! sent with the provider's own fields it came with.

use std::collections::HashMap;

use serde_json::{Map, Value, json};

use super::types::ChatMessage;
use crate::host::ToolSpec;

/// Most tools a request carries: OpenAI's limit, the lowest common one.
pub const MAX_TOOLS: usize = 128;

/// Host tool names ↔ the names the model sees.
#[derive(Debug, Default)]
pub struct ToolNames {
    to_wire: HashMap<String, String>,
    to_host: HashMap<String, String>,
}

impl ToolNames {
    pub fn new(tools: &[ToolSpec]) -> Self {
        let mut names = Self::default();
        for tool in tools {
            let base = wire_name(&tool.name);
            let mut wire = base.clone();
            let mut n = 2;
            while names.to_host.contains_key(&wire) {
                let suffix = format!("_{n}");
                wire = format!("{}{suffix}", &base[..base.len().min(64 - suffix.len())]);
                n += 1;
            }
            names.to_wire.insert(tool.name.clone(), wire.clone());
            names.to_host.insert(wire, tool.name.clone());
        }
        names
    }

    pub fn wire<'a>(&'a self, host: &'a str) -> &'a str {
        self.to_wire.get(host).map_or(host, String::as_str)
    }

    /// The host's name of a tool the model called (unknown names stay as they are).
    pub fn host<'a>(&'a self, wire: &'a str) -> &'a str {
        self.to_host.get(wire).map_or(wire, String::as_str)
    }
}

/// `^[A-Za-z_][A-Za-z0-9_-]{0,63}$`: OpenAI allows 64 of `[A-Za-z0-9_-]`,
/// Gemini wants a letter or `_` first.
fn wire_name(name: &str) -> String {
    let mut out: String =
        name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' }).collect();
    if !out.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') {
        out.insert(0, '_');
    }
    out.truncate(64);
    out
}

/// A host's `inputSchema` as providers accept it: always an object schema
/// with `properties`.
pub fn object_schema(schema: &Value) -> Value {
    let mut schema = match schema {
        Value::Object(map) if map.get("type").is_none_or(|t| t == "object") => map.clone(),
        _ => Map::new(),
    };
    schema.insert("type".into(), json!("object"));
    if !schema.get("properties").is_some_and(Value::is_object) {
        schema.insert("properties".into(), json!({}));
    }
    Value::Object(schema)
}

/// The request body of one streamed step.
pub fn body(model: &str, messages: &[ChatMessage], tools: &[ToolSpec], names: &ToolNames, usage: bool) -> Value {
    let messages: Vec<Value> = messages.iter().map(|m| message(m, names)).collect();
    let mut body = json!({ "model": model, "messages": messages, "stream": true });
    if usage {
        body["stream_options"] = json!({ "include_usage": true });
    }
    if !tools.is_empty() {
        let tools: Vec<Value> = tools
            .iter()
            .take(MAX_TOOLS)
            .map(|tool| {
                json!({ "type": "function", "function": {
                    "name": names.wire(&tool.name),
                    "description": tool.description,
                    "parameters": object_schema(&tool.input_schema.value()),
                }})
            })
            .collect();
        body["tools"] = Value::Array(tools);
    }
    body
}

fn message(message: &ChatMessage, names: &ToolNames) -> Value {
    match message {
        ChatMessage::System(text) => json!({ "role": "system", "content": text }),
        ChatMessage::User(text) => json!({ "role": "user", "content": text }),
        // OpenAI's content parts: the text, then each image as a `data:` URL.
        ChatMessage::UserWithImages { text, images } => {
            let mut parts = vec![json!({ "type": "text", "text": text })];
            parts.extend(images.iter().map(|image| {
                json!({ "type": "image_url", "image_url": {
                    "url": format!("data:{};base64,{}", image.media_type, image.base64) } })
            }));
            json!({ "role": "user", "content": parts })
        }
        ChatMessage::Assistant { text, tool_calls } => {
            let mut out =
                json!({ "role": "assistant", "content": if text.is_empty() { Value::Null } else { json!(text) } });
            if !tool_calls.is_empty() {
                let calls: Vec<Value> = tool_calls
                    .iter()
                    .map(|call| {
                        let mut wire = call.extra.clone().unwrap_or_default();
                        wire.insert("id".into(), json!(call.id));
                        wire.insert("type".into(), json!("function"));
                        let arguments = if call.arguments.trim().is_empty() { "{}" } else { &call.arguments };
                        wire.insert(
                            "function".into(),
                            json!({ "name": names.wire(&call.name), "arguments": arguments }),
                        );
                        Value::Object(wire)
                    })
                    .collect();
                out["tool_calls"] = Value::Array(calls);
            }
            out
        }
        ChatMessage::Tool { call_id, content } => {
            json!({ "role": "tool", "tool_call_id": call_id, "content": content })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(name: &str, schema: Value) -> ToolSpec {
        serde_json::from_value(json!({"name": name, "verb": "get", "inputSchema": schema})).unwrap()
    }

    #[test]
    fn a_message_with_images_is_its_text_then_each_image_as_a_data_url() {
        let image = crate::llm::Image { media_type: "image/png", base64: "iVBORw0K".into() };
        let messages = [ChatMessage::UserWithImages { text: "what dish is this?".into(), images: vec![image] }];
        let body = body("gpt-4o", &messages, &[], &ToolNames::new(&[]), false);
        assert_eq!(
            body["messages"][0],
            json!({"role": "user", "content": [
                {"type": "text", "text": "what dish is this?"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0K"}},
            ]})
        );
    }

    #[test]
    fn schemas_providers_refuse_become_object_schemas() {
        for refused in [json!({}), Value::Null, json!({"type": "string"}), json!([1]), json!({"type": "object"})] {
            let fixed = object_schema(&refused);
            assert_eq!((fixed["type"].as_str(), fixed["properties"].is_object()), (Some("object"), true), "{refused}");
        }
        let kept = json!({"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]});
        assert_eq!(object_schema(&kept), kept);
        let untyped = object_schema(&json!({"properties": {"q": {"type": "string"}}}));
        assert_eq!(untyped["properties"]["q"]["type"], "string");
    }

    #[test]
    fn names_a_provider_rejects_are_mapped_and_mapped_back() {
        let tools = [tool("menu.show", json!({})), tool("menu:show", json!({})), tool("3d-view", json!({}))];
        let names = ToolNames::new(&tools);
        let wire: Vec<&str> = tools.iter().map(|t| names.wire(&t.name)).collect();
        assert_eq!(wire, ["menu_show", "menu_show_2", "_3d-view"]);
        for t in &tools {
            assert_eq!(names.host(names.wire(&t.name)), t.name);
        }
        assert_eq!(names.host("not_offered"), "not_offered");
        let long = "x".repeat(80);
        assert_eq!(ToolNames::new(&[tool(&long, json!({}))]).wire(&long).len(), 64);
    }
}
