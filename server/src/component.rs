//! Rich results: a tool's `output` may carry one top-level `component`
//! object beside `display` (our extension of remote-tools-contract.md):
//!
//! ```json
//! "component": { "kind": "menu_cart", "data": { … },
//!                "tools": ["add_to_cart", "remove_from_cart"], "update": true }
//! ```
//!
//! `kind` picks the widget's renderer (an unknown kind shows nothing);
//! `data` is the kind's own object, read by the widget as text only;
//! `tools` names the tools the component's buttons may call directly
//! (checked again at each call: never a `delete`, only tools the host lists
//! and the workspace allows); `update` asks to refresh the components of
//! this kind already shown rather than add one. A malformed component is
//! skipped silently, like a malformed display entry.

use serde_json::Value;

use crate::host::valid_tool_name;

/// Largest `data`, serialized.
pub const MAX_DATA_BYTES: usize = 64 * 1024;
/// Most tools one component may declare.
pub const MAX_TOOLS: usize = 8;

/// A tool result's component, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct HostComponent {
    pub kind: String,
    pub data: Value,
    pub tools: Vec<String>,
    pub update: bool,
}

/// `^[a-z][a-z0-9_]{0,39}$`
fn valid_kind(kind: &str) -> bool {
    let mut bytes = kind.bytes();
    kind.len() <= 40
        && bytes.next().is_some_and(|b| b.is_ascii_lowercase())
        && bytes.all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
}

/// The component of a tool's `output`, if it has a valid one.
pub fn from_output(output: &Value) -> Option<HostComponent> {
    let component = output.get("component")?.as_object()?;
    let kind = component.get("kind")?.as_str()?;
    if !valid_kind(kind) {
        return None;
    }
    let data = component.get("data")?;
    if !data.is_object() || data.to_string().len() > MAX_DATA_BYTES {
        return None;
    }
    let tools = match component.get("tools") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(names)) => {
            let mut tools: Vec<String> = Vec::new();
            for name in names.iter().filter_map(Value::as_str).filter(|n| valid_tool_name(n)) {
                if tools.len() < MAX_TOOLS && !tools.iter().any(|t| t == name) {
                    tools.push(name.to_owned());
                }
            }
            tools
        }
        Some(_) => return None,
    };
    let update = component.get("update").and_then(Value::as_bool).unwrap_or(false);
    Some(HostComponent { kind: kind.to_owned(), data: data.clone(), tools, update })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_valid_component_is_kept() {
        let c = from_output(&json!({"component": {"kind": "menu_cart", "data": {"items": []},
            "tools": ["add_to_cart", "add_to_cart", "bad name", 5, "remove_from_cart"], "update": true}}))
        .unwrap();
        assert_eq!(c.kind, "menu_cart");
        assert_eq!(c.tools, ["add_to_cart", "remove_from_cart"]);
        assert!(c.update);
    }

    #[test]
    fn malformed_components_are_skipped() {
        for output in [
            json!({}),
            json!({"component": "menu_cart"}),
            json!({"component": {"data": {}}}),
            json!({"component": {"kind": "Menu", "data": {}}}),
            json!({"component": {"kind": "menu cart", "data": {}}}),
            json!({"component": {"kind": "<script>", "data": {}}}),
            json!({"component": {"kind": "x".repeat(41), "data": {}}}),
            json!({"component": {"kind": "menu_cart"}}),
            json!({"component": {"kind": "menu_cart", "data": [1, 2]}}),
            json!({"component": {"kind": "menu_cart", "data": {}, "tools": "add_to_cart"}}),
            json!({"component": {"kind": "menu_cart", "data": {"blob": "x".repeat(MAX_DATA_BYTES)}}}),
        ] {
            assert_eq!(from_output(&output), None, "{output}");
        }
    }

    #[test]
    fn at_most_eight_tools_are_declared() {
        let names: Vec<String> = (0..20).map(|i| format!("t{i}")).collect();
        let c = from_output(&json!({"component": {"kind": "k", "data": {}, "tools": names}})).unwrap();
        assert_eq!(c.tools.len(), MAX_TOOLS);
    }
}
