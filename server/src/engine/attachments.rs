//! Tools reach a visitor's files only through short-lived signed links
//! (issue #32): where a tool's input schema takes an attachment — a string
//! property marked `"x-attachment": true`, or an array of them
//! (docs/api-extensions.md) — the model passes the attachment's id, and the
//! engine hands the tool a link to that one file instead
//! (`/v1/attachments/{id}/content?exp=…&sig=…`, minutes). Only the
//! attachments sent in this conversation may be passed; the transcript
//! keeps the ids, never the links.

use serde_json::Value;

use super::context::Turn;
use super::outcome::tool_error;
use crate::db;
use crate::host::ToolSpec;

/// The top-level properties of `schema` that take an attachment, and
/// whether each takes a list of them.
pub(super) fn attachment_fields(schema: &Value) -> Vec<(String, bool)> {
    let marked = |s: &Value| s.get("x-attachment").and_then(Value::as_bool) == Some(true);
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else { return Vec::new() };
    properties
        .iter()
        .filter_map(|(name, property)| {
            if marked(property) {
                Some((name.clone(), false))
            } else if property.get("items").is_some_and(marked) {
                Some((name.clone(), true))
            } else {
                None
            }
        })
        .collect()
}

impl Turn<'_> {
    /// `arguments` as the tool gets them: each attachment id where its
    /// schema takes an attachment becomes a signed link to the file. An id
    /// that is not one of this conversation's attachments is refused, in
    /// words for the model.
    pub(super) async fn with_attachment_links(&self, tool: &ToolSpec, arguments: &Value) -> Result<Value, String> {
        let fields = attachment_fields(&tool.input_schema.value());
        if fields.is_empty() {
            return Ok(arguments.clone());
        }
        let engine = self.engine;
        let sent = db::attachments::sent(&engine.pool, &self.input.conversation_id).await.map_err(|error| {
            tracing::error!(error = format!("{error:#}"), "cannot read the conversation's attachments");
            tool_error("the attachments could not be read; try again", "unavailable")
        })?;
        let now = engine.clock.now_ms();
        let workspace = &self.input.caller.workspace_id;
        let link = |value: &mut Value| -> Result<(), String> {
            let Some(id) = value.as_str() else { return Ok(()) };
            if !sent.iter().any(|s| s.id == id) {
                return Err(tool_error(
                    &format!("`{id}` is not a file the visitor attached in this conversation: pass an attachment id"),
                    "invalid_arguments",
                ));
            }
            *value = Value::String(engine.attachments.links().sign(workspace, id, now));
            Ok(())
        };
        let mut arguments = arguments.clone();
        for (field, list) in fields {
            match (arguments.get_mut(&field), list) {
                (Some(Value::Array(items)), true) => items.iter_mut().try_for_each(link)?,
                (Some(value), false) => link(value)?,
                _ => {}
            }
        }
        Ok(arguments)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::attachment_fields;

    #[test]
    fn the_fields_that_take_an_attachment_are_the_marked_ones() {
        let schema = json!({"type": "object", "properties": {
            "photo": {"type": "string", "x-attachment": true},
            "receipts": {"type": "array", "items": {"type": "string", "x-attachment": true}},
            "note": {"type": "string"},
            "unmarked": {"type": "string", "x-attachment": "yes"},
        }});
        let mut fields = attachment_fields(&schema);
        fields.sort();
        assert_eq!(fields, [("photo".to_owned(), false), ("receipts".to_owned(), true)]);
        assert!(attachment_fields(&json!({"type": "object"})).is_empty());
        assert!(attachment_fields(&json!(true)).is_empty());
    }
}
