//! Checking a model step's tool calls before anything reaches the host.
//! The model's mistakes — an unknown tool, arguments that are not a JSON
//! object or do not fit the tool's `inputSchema` — become answers to the
//! model (and count as an iteration). Only a step's first change may go on
//! to a preview: the others are answered as not executed
//! (remote-tools-contract.md, "Verb semantics").

use serde_json::{Value, json};

use super::outcome::tool_error;
use crate::host::ToolSpec;
use crate::llm::ToolCall;

/// What to do with one tool call of a step.
pub(super) enum Plan<'a> {
    /// Answer the model with this content; nothing reaches the host.
    Answer(String),
    /// Run this `get` tool with these arguments.
    Get(&'a ToolSpec, Value),
    /// The step's change, previewed after the step's reads.
    Deferred,
}

/// The step's change: the call at `index`, for `tool`.
pub(super) struct Change<'a> {
    pub index: usize,
    pub tool: &'a ToolSpec,
    pub arguments: Value,
}

/// Plans every call of a step; at most one change goes ahead.
pub(super) fn plan_step<'a>(calls: &[ToolCall], tools: &'a [ToolSpec]) -> (Vec<Plan<'a>>, Option<Change<'a>>) {
    let mut change = None;
    let plans = calls
        .iter()
        .enumerate()
        .map(|(index, call)| match check(call, tools) {
            Err(answer) => Plan::Answer(answer),
            Ok((tool, arguments)) if !tool.verb.changes() => Plan::Get(tool, arguments),
            Ok((tool, arguments)) if change.is_none() => {
                change = Some(Change { index, tool, arguments });
                Plan::Deferred
            }
            Ok(_) => Plan::Answer(tool_error(
                "not executed: only one change can wait for the user's confirmation at a time; \
                 propose this one again after the user has answered the first",
                "not_executed",
            )),
        })
        .collect();
    (plans, change)
}

/// The tool a call names and its arguments, or what the model is told.
fn check<'a>(call: &ToolCall, tools: &'a [ToolSpec]) -> Result<(&'a ToolSpec, Value), String> {
    let Some(tool) = tools.iter().find(|t| t.name == call.name) else {
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
        return Err(tool_error(&format!("unknown tool; the tools are: {}", names.join(", ")), "unknown_tool"));
    };
    let arguments = if call.arguments.trim().is_empty() {
        json!({})
    } else {
        match serde_json::from_str::<Value>(&call.arguments) {
            Ok(value @ Value::Object(_)) => value,
            _ => return Err(tool_error("the arguments are not a JSON object", "invalid_arguments")),
        }
    };
    if let Err(problems) = crate::schema::check(&tool.input_schema.value(), &arguments) {
        return Err(tool_error(
            &format!("the arguments do not fit the tool's inputSchema: {problems}"),
            "invalid_arguments",
        ));
    }
    Ok((tool, arguments))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tools() -> Vec<ToolSpec> {
        serde_json::from_value(json!([
            {"name": "find", "verb": "get", "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}},
            {"name": "remove", "verb": "delete", "inputSchema": {"type": "object"}},
            {"name": "add", "verb": "create", "inputSchema": {"type": "object"}},
        ]))
        .unwrap()
    }

    fn call(name: &str, arguments: &str) -> ToolCall {
        ToolCall { id: "c".into(), name: name.into(), arguments: arguments.into(), extra: None }
    }

    #[test]
    fn the_models_mistakes_never_reach_the_host() {
        let tools = tools();
        for (name, args) in
            [("nope", "{}"), ("find", "not json"), ("find", "[1]"), ("find", r#"{"q": 5}"#), ("find", "{}")]
        {
            let (plans, change) = plan_step(&[call(name, args)], &tools);
            assert!(matches!(plans[..], [Plan::Answer(_)]) && change.is_none(), "{name} {args}");
        }
        let (plans, _) = plan_step(&[call("find", r#"{"q": "x"}"#)], &tools);
        assert!(matches!(plans[..], [Plan::Get(..)]));
        let (plans, change) = plan_step(&[call("remove", "")], &tools);
        assert!(matches!(plans[..], [Plan::Deferred]));
        assert_eq!(change.map(|c| c.tool.name.as_str()), Some("remove"));
    }

    #[test]
    fn only_the_first_change_of_a_step_goes_ahead() {
        let tools = tools();
        let calls = [call("add", "{}"), call("find", r#"{"q": "x"}"#), call("remove", "{}")];
        let (plans, change) = plan_step(&calls, &tools);
        assert!(matches!(plans[0], Plan::Deferred));
        assert!(matches!(plans[1], Plan::Get(..)));
        assert!(matches!(&plans[2], Plan::Answer(a) if a.contains("not_executed")));
        assert_eq!(change.map(|c| (c.index, c.tool.name.as_str())), Some((0, "add")));
    }
}
