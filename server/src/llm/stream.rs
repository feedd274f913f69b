//! What the chunks of a chat-completions stream add up to, read the way
//! providers really send them. async-openai does the HTTP and the
//! server-sent events (`eventsource-stream`: CRLF, comments, `data:`
//! without its space) and hands each event over as loose JSON; the
//! [`Accumulator`] merges it into our own types rather than strict ones:
//! missing or empty `id`/`model`/`object`, `choices: []` (Azure's prompt
//! filter results), tool-call deltas without `index`, several calls in
//! one delta, `reasoning_content` (never part of the answer), usage
//! wherever it comes (the chunk, a choice, or a vendor field such as
//! `x_groq.usage`), and provider fields of a tool call (Gemini's
//! `extra_content`) kept for the next request.

use serde_json::{Map, Value};

use super::errors::ModelError;
use super::types::{Finish, ToolCall};

/// What the chunks of one step add up to.
#[derive(Debug, Default)]
pub struct Accumulator {
    pub text: String,
    pub calls: Vec<ToolCall>,
    /// (prompt, completion) tokens, the last the provider reported.
    pub usage: Option<(u64, u64)>,
    pub finish: Option<Finish>,
    /// Index of each call as the provider numbered it.
    indexes: Vec<Option<u64>>,
    /// True once the answer began (text or a tool call).
    pub started: bool,
}

/// Longest tool-call list a step may build (a hostile stream cannot grow it further).
const MAX_CALLS: usize = 64;

impl Accumulator {
    /// Merges a chunk, or a whole non-streamed completion (a `message` in
    /// place of a `delta`); returns the text it added.
    pub fn merge_chunk(&mut self, chunk: &Value) -> Result<String, ModelError> {
        if let Some(error) = chunk.get("error").filter(|e| !e.is_null()) {
            return Err(ModelError::from_error_body(None, error));
        }
        for usage in [chunk.get("usage"), chunk.pointer("/x_groq/usage")].into_iter().flatten() {
            if let Some(tokens) = read_usage(usage) {
                self.usage = Some(tokens);
            }
        }
        let mut added = String::new();
        for choice in chunk.get("choices").and_then(Value::as_array).into_iter().flatten() {
            if let Some(tokens) = choice.get("usage").and_then(read_usage) {
                self.usage = Some(tokens);
            }
            if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
                self.finish = Some(Finish::parse(reason));
            }
            let Some(delta) = choice.get("delta").or_else(|| choice.get("message")).filter(|d| d.is_object()) else {
                continue;
            };
            if let Some(text) = delta.get("content").and_then(Value::as_str).filter(|t| !t.is_empty()) {
                self.started = true;
                self.text.push_str(text);
                added.push_str(text);
            }
            for call in delta.get("tool_calls").and_then(Value::as_array).into_iter().flatten() {
                self.merge_call(call)?;
            }
        }
        Ok(added)
    }

    fn merge_call(&mut self, delta: &Value) -> Result<(), ModelError> {
        let Some(delta) = delta.as_object() else { return Ok(()) };
        self.started = true;
        let index = delta.get("index").and_then(Value::as_u64);
        let id = delta.get("id").and_then(Value::as_str).filter(|id| !id.is_empty());
        let function = delta.get("function");
        let name = function.and_then(|f| f.get("name")).and_then(Value::as_str).filter(|n| !n.is_empty());
        // Which call this delta continues: the one with its index; without
        // an index, the last one, unless the delta starts a new call: a new
        // id, or (no id) a name after a call that is already whole.
        let position = match index {
            Some(i) => self.indexes.iter().position(|known| *known == Some(i)),
            None => self.calls.last().and_then(|last| {
                let new_id = id.is_some_and(|id| id != last.id);
                let whole = serde_json::from_str::<Value>(&last.arguments).is_ok();
                let new_name = id.is_none() && name.is_some_and(|n| !last.name.is_empty() && (n != last.name || whole));
                (!new_id && !new_name).then(|| self.calls.len() - 1)
            }),
        };
        let position = match position {
            Some(p) => p,
            None => {
                if self.calls.len() >= MAX_CALLS {
                    return Err(ModelError::Broken("the model sent too many tool calls".into()));
                }
                self.calls.push(ToolCall::default());
                self.indexes.push(index);
                self.calls.len() - 1
            }
        };
        let call = &mut self.calls[position];
        if let Some(id) = id {
            call.id = id.to_owned();
        }
        if let Some(name) = name
            && call.name != name
        {
            call.name.push_str(name);
        }
        match function.and_then(|f| f.get("arguments")) {
            Some(Value::String(piece)) => call.arguments.push_str(piece),
            // Some servers send the arguments as an object, whole.
            Some(object @ Value::Object(_)) => call.arguments = object.to_string(),
            _ => {}
        }
        // Anything else the provider put on the call goes back with it.
        for (key, value) in delta {
            if !matches!(key.as_str(), "index" | "id" | "type" | "function") {
                call.extra.get_or_insert_with(Map::new).insert(key.clone(), value.clone());
            }
        }
        Ok(())
    }
}

/// `prompt_tokens`/`completion_tokens` (or `input_tokens`/`output_tokens`).
fn read_usage(usage: &Value) -> Option<(u64, u64)> {
    let get = |a: &str, b: &str| usage.get(a).or_else(|| usage.get(b)).and_then(Value::as_u64);
    let prompt = get("prompt_tokens", "input_tokens");
    let completion = get("completion_tokens", "output_tokens");
    if prompt.is_none() && completion.is_none() {
        return None;
    }
    Some((prompt.unwrap_or(0), completion.unwrap_or(0)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn merged(chunks: &[Value]) -> Accumulator {
        let mut acc = Accumulator::default();
        for chunk in chunks {
            acc.merge_chunk(chunk).unwrap();
        }
        acc
    }

    #[test]
    fn tool_calls_without_index_are_told_apart_by_id_and_name() {
        let acc = merged(&[
            serde_json::json!({"choices": [{"delta": {"tool_calls": [
                {"id": "a", "type": "function", "function": {"name": "lookup"}},
            ]}}]}),
            serde_json::json!({"choices": [{"delta": {"tool_calls": [
                {"id": "", "type": "", "function": {"arguments": "{\"q\":"}},
            ]}}]}),
            serde_json::json!({"choices": [{"delta": {"tool_calls": [
                {"function": {"arguments": "\"x\"}"}},
                {"id": "b", "function": {"name": "find", "arguments": "{}"}},
            ]}}]}),
        ]);
        let calls: Vec<_> = acc.calls.iter().map(|c| (c.id.as_str(), c.name.as_str(), c.arguments.as_str())).collect();
        assert_eq!(calls, [("a", "lookup", "{\"q\":\"x\"}"), ("b", "find", "{}")]);
    }

    #[test]
    fn reasoning_is_not_the_answer_and_vendor_usage_counts() {
        let acc = merged(&[
            serde_json::json!({"choices": [{"delta": {"reasoning_content": "thinking…", "content": null}}]}),
            serde_json::json!({"choices": [{"delta": {"content": "Hi"}, "finish_reason": "stop"}]}),
            serde_json::json!({"choices": [], "x_groq": {"usage": {"prompt_tokens": 7, "completion_tokens": 2}}}),
        ]);
        assert_eq!((acc.text.as_str(), acc.usage, acc.finish), ("Hi", Some((7, 2)), Some(Finish::Stop)));
    }

    #[test]
    fn a_tool_calls_provider_fields_are_kept() {
        let signature = serde_json::json!({"google": {"thought_signature": "c2ln"}});
        let acc = merged(&[serde_json::json!({"choices": [{"delta": {"tool_calls": [
            {"index": 0, "id": "x", "type": "function", "extra_content": signature.clone(),
             "function": {"name": "lookup", "arguments": "{}"}},
        ]}}]})]);
        assert_eq!(acc.calls[0].extra.as_ref().unwrap()["extra_content"], signature);
    }
}
