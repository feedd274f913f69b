//! Which verb an MCP tool gets, safe by default (docs/mcp.md,
//! "Classification"). MCP's annotations are hints the spec calls untrusted
//! unless the server is: only a workspace that says it trusts them
//! (`trust_annotations`) lets a read-only tool run by itself, and the host's
//! own `verbs` win over both.

use serde_json::Value;
use widget::wire::Verb;

/// A tool's annotations as the server sent them; `None` where it said nothing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Hints {
    pub read_only: Option<bool>,
    pub destructive: Option<bool>,
    pub idempotent: Option<bool>,
}

impl Hints {
    /// The hints of a tool as listed (`annotations.readOnlyHint`, …);
    /// anything not a boolean counts as unsaid.
    pub fn of(tool: &Value) -> Self {
        let hint = |name: &str| tool.pointer(&format!("/annotations/{name}")).and_then(Value::as_bool);
        Self {
            read_only: hint("readOnlyHint"),
            destructive: hint("destructiveHint"),
            idempotent: hint("idempotentHint"),
        }
    }
}

/// The verb of a tool: the host's word if it gave one; else, from the
/// hints with the spec's defaults (not read-only, destructive, not
/// idempotent), `delete` for anything that may destroy, `get` for a
/// read-only tool only when the annotations are trusted, and otherwise a
/// change that needs Apply (`update` when idempotent, else `create`).
pub fn verb(hints: Hints, trust_annotations: bool, host_says: Option<Verb>) -> Verb {
    if let Some(verb) = host_says {
        return verb;
    }
    let read_only = hints.read_only == Some(true);
    // `destructiveHint` means something only for a tool that is not read-only.
    if !read_only && hints.destructive != Some(false) {
        return Verb::Delete;
    }
    if read_only && trust_annotations {
        return Verb::Get;
    }
    if hints.idempotent == Some(true) { Verb::Update } else { Verb::Create }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn classified(annotations: Value, trust: bool) -> Verb {
        verb(Hints::of(&json!({ "name": "t", "annotations": annotations })), trust, None)
    }

    #[test]
    fn the_classification_table_holds() {
        let read_only = json!({"readOnlyHint": true});
        let additive = json!({"readOnlyHint": false, "destructiveHint": false});
        let idempotent = json!({"readOnlyHint": false, "destructiveHint": false, "idempotentHint": true});
        let destructive = json!({"readOnlyHint": false, "destructiveHint": true});
        let only_not_destructive = json!({"destructiveHint": false});
        let unannotated = json!({});
        let hostile = json!({"readOnlyHint": "yes", "destructiveHint": 0});
        let table = [
            (&read_only, Verb::Get, Verb::Create),
            (&additive, Verb::Create, Verb::Create),
            (&idempotent, Verb::Update, Verb::Update),
            (&destructive, Verb::Delete, Verb::Delete),
            (&only_not_destructive, Verb::Create, Verb::Create),
            (&unannotated, Verb::Delete, Verb::Delete),
            (&hostile, Verb::Delete, Verb::Delete),
        ];
        for (annotations, trusted, untrusted) in table {
            assert_eq!(classified(annotations.clone(), true), trusted, "trusted {annotations}");
            assert_eq!(classified(annotations.clone(), false), untrusted, "untrusted {annotations}");
        }
        assert_eq!(verb(Hints::of(&json!({"name": "t"})), true, None), Verb::Delete, "no annotations at all");
    }

    #[test]
    fn the_hosts_word_wins_over_any_hint() {
        let destructive = Hints::of(&json!({"annotations": {"destructiveHint": true}}));
        assert_eq!(verb(destructive, true, Some(Verb::Get)), Verb::Get);
        let read_only = Hints::of(&json!({"annotations": {"readOnlyHint": true}}));
        assert_eq!(verb(read_only, true, Some(Verb::Delete)), Verb::Delete);
    }
}
