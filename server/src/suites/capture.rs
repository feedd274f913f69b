//! **Save as test**: a conversation as it happened, turned into a case to
//! edit — the visitor's messages in order, the tools each turn called with
//! their arguments as expectations, the change each left waiting, and
//! what the visitor then did with it (confirmed, applied, declined).

use serde_json::{Value, json};
use widget::wire::ActionStatus;

/// A message of the conversation.
#[derive(Debug, Clone)]
pub struct Said {
    /// `user`, `assistant` or `tool`.
    pub role: String,
    pub text: String,
    /// The tools an assistant step called: (call id, name, arguments).
    pub tool_calls: Vec<(String, String, Value)>,
    /// Files the visitor sent with it, by name (a suite sends files by path:
    /// they are named in a comment to add by hand).
    pub files: Vec<String>,
}

/// A change the conversation proposed, and what became of it.
#[derive(Debug, Clone)]
pub struct Proposed {
    pub call_id: String,
    pub tool: String,
    pub arguments: Value,
    pub status: ActionStatus,
    /// 2 for a delete (confirmed before it is applied).
    pub confirmations_required: u8,
}

/// The suite (one case) the conversation makes, as data.
pub fn suite(title: &str, messages: &[Said], proposed: &[Proposed]) -> Value {
    let mut steps: Vec<Value> = Vec::new();
    let mut turn: Option<(Value, Vec<Value>)> = None;
    let close = |turn: Option<(Value, Vec<Value>)>, steps: &mut Vec<Value>| {
        let Some((mut step, called)) = turn else { return };
        let mut followups = Vec::new();
        let mut expect = serde_json::Map::new();
        let mut calls = Vec::new();
        for call in called {
            let (id, name, arguments) = (&call["id"], &call["name"], &call["arguments"]);
            match proposed.iter().find(|p| id.as_str() == Some(p.call_id.as_str())) {
                Some(change) => {
                    expect
                        .insert("pending_action".into(), json!({ "tool": change.tool, "arguments": change.arguments }));
                    followups.extend(what_the_visitor_did(change));
                }
                None => calls.push(json!({ "name": name, "arguments": arguments })),
            }
        }
        match calls.len() {
            0 => {}
            1 => {
                expect.insert("tool_called".into(), calls.remove(0));
            }
            _ => {
                expect.insert("tool_called".into(), Value::Array(calls));
            }
        }
        if !expect.is_empty() {
            step["expect"] = Value::Object(expect);
        }
        steps.push(step);
        steps.extend(followups);
    };
    for message in messages {
        match message.role.as_str() {
            "user" => {
                close(turn.take(), &mut steps);
                let mut step = json!({ "user": message.text });
                if !message.files.is_empty() {
                    // Paths beside the suite: the files themselves are the host's to add.
                    step["files"] = json!(message.files);
                }
                turn = Some((step, Vec::new()));
            }
            "assistant" => {
                if let Some((_, called)) = turn.as_mut() {
                    called.extend(
                        message
                            .tool_calls
                            .iter()
                            .map(|(id, name, arguments)| json!({"id": id, "name": name, "arguments": arguments})),
                    );
                }
            }
            _ => {}
        }
    }
    close(turn.take(), &mut steps);
    let name: String = title.chars().take(80).collect();
    let name = if name.trim().is_empty() { "a saved conversation".to_owned() } else { name };
    json!({ "name": name, "cases": [{ "name": name, "steps": steps }] })
}

/// The steps after a change was proposed: what the visitor did with it.
fn what_the_visitor_did(change: &Proposed) -> Vec<Value> {
    let applied = matches!(
        change.status,
        ActionStatus::Executing | ActionStatus::Succeeded | ActionStatus::Failed | ActionStatus::Stale
    );
    let mut steps = Vec::new();
    if change.confirmations_required > 1 && (applied || change.status == ActionStatus::ConfirmedOnce) {
        steps.push(json!({ "confirm": true }));
    }
    if applied {
        steps.push(json!({ "apply": true }));
    } else if change.status == ActionStatus::Cancelled {
        steps.push(json!({ "cancel": true }));
    }
    steps
}

/// The suite as YAML, with a header saying what to do with it.
pub fn to_yaml(suite: &Value) -> String {
    let body = yaml_serde::to_string(suite).unwrap_or_else(|_| suite.to_string());
    format!(
        "# Saved from a conversation: its messages, the tools it called and what the visitor did.\n\
         # Add what the replies must say (reply_contains, language, judge…) — docs/assistant-tests.md.\n{body}"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn said(role: &str, text: &str, calls: &[(&str, &str, Value)]) -> Said {
        Said {
            role: role.into(),
            text: text.into(),
            tool_calls: calls.iter().map(|(i, n, a)| ((*i).to_owned(), (*n).to_owned(), a.clone())).collect(),
            files: Vec::new(),
        }
    }

    #[test]
    fn a_conversation_becomes_a_case_with_its_calls_and_changes() {
        let messages = [
            said("user", "show me the menu", &[]),
            said("assistant", "", &[("c1", "show_menu", json!({}))]),
            said("tool", "{}", &[]),
            said("assistant", "Here is the menu.", &[]),
            said("user", "add two margheritas", &[]),
            said("assistant", "", &[("c2", "add_to_cart", json!({"item": "stone_pizza", "quantity": 2}))]),
            said("user", "clear my cart", &[]),
            said("assistant", "", &[("c3", "clear_cart", json!({}))]),
            said("user", "thanks", &[]),
        ];
        let proposed = [
            Proposed {
                call_id: "c2".into(),
                tool: "add_to_cart".into(),
                arguments: json!({"item": "stone_pizza", "quantity": 2}),
                status: ActionStatus::Succeeded,
                confirmations_required: 1,
            },
            Proposed {
                call_id: "c3".into(),
                tool: "clear_cart".into(),
                arguments: json!({}),
                status: ActionStatus::Cancelled,
                confirmations_required: 2,
            },
        ];
        let suite = suite("Menu and cart", &messages, &proposed);
        assert_eq!(
            suite["cases"][0]["steps"],
            json!([
                {"user": "show me the menu", "expect": {"tool_called": {"name": "show_menu", "arguments": {}}}},
                {"user": "add two margheritas",
                 "expect": {"pending_action": {"tool": "add_to_cart", "arguments": {"item": "stone_pizza", "quantity": 2}}}},
                {"apply": true},
                {"user": "clear my cart", "expect": {"pending_action": {"tool": "clear_cart", "arguments": {}}}},
                {"cancel": true},
                {"user": "thanks"},
            ])
        );
        let yaml = to_yaml(&suite);
        let read = crate::suites::parse(&yaml).expect("the saved suite reads back");
        assert_eq!(read.cases[0].steps.len(), 6);
        assert!(yaml.starts_with("# Saved from a conversation"));
    }
}
