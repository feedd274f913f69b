//! Checking a model's tool arguments against the tool's `inputSchema`
//! (any JSON Schema draft, detected from `$schema`; 2020-12 otherwise).
//! Validators are cached by schema text: building one compiles the schema,
//! outside the cache's lock, so a slow compilation holds up nobody else's
//! turn; a schema larger or deeper than a tool's may be is never offered
//! ([`too_large`]).

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};

use serde_json::Value;

/// The largest `inputSchema` a tool may have, serialized.
pub const MAX_SCHEMA_BYTES: usize = 64 * 1024;
/// The deepest nesting of objects and arrays a tool's `inputSchema` may have.
pub const MAX_SCHEMA_DEPTH: usize = 32;

/// Why `schema` is too large or deep to offer to a model, if it is.
pub fn too_large(schema: &Value) -> Option<String> {
    let bytes = schema.to_string().len();
    if bytes > MAX_SCHEMA_BYTES {
        return Some(format!("inputSchema is {bytes} bytes (at most {MAX_SCHEMA_BYTES})"));
    }
    let depth = depth(schema);
    (depth > MAX_SCHEMA_DEPTH).then(|| format!("inputSchema nests {depth} deep (at most {MAX_SCHEMA_DEPTH})"))
}

fn depth(value: &Value) -> usize {
    match value {
        Value::Object(map) => 1 + map.values().map(depth).max().unwrap_or(0),
        Value::Array(items) => 1 + items.iter().map(depth).max().unwrap_or(0),
        _ => 0,
    }
}

/// Schemas kept compiled, at most; the cache starts over past that.
const CACHE_LIMIT: usize = 512;

/// `None` marks a schema that does not compile.
type Cache = HashMap<String, Option<Arc<jsonschema::Validator>>>;

static CACHE: LazyLock<Mutex<Cache>> = LazyLock::new(Mutex::default);

/// `Ok` when `arguments` satisfy `schema`; otherwise the first problems,
/// with their paths. A schema that does not compile (the host's mistake,
/// logged) or needs a remote `$ref` checks nothing rather than blocking the tool.
pub fn check(schema: &Value, arguments: &Value) -> Result<(), String> {
    let Some(validator) = validator(schema) else { return Ok(()) };
    if validator.is_valid(arguments) {
        return Ok(());
    }
    let problems: Vec<String> = validator
        .iter_errors(arguments)
        .take(3)
        .map(|e| {
            let path = e.instance_path().as_str().to_owned();
            format!("{}: {e}", if path.is_empty() { "/" } else { &path })
        })
        .collect();
    Err(problems.join("; "))
}

fn validator(schema: &Value) -> Option<Arc<jsonschema::Validator>> {
    let key = schema.to_string();
    let cache = || CACHE.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(found) = cache().get(&key) {
        return found.clone();
    }
    // Compiled with the lock released. Linear-time regular expressions: a
    // host's `pattern` cannot stall us.
    let built = jsonschema::options()
        .with_pattern_options(jsonschema::PatternOptions::regex())
        .build(schema)
        .map_err(|error| tracing::warn!(%error, "a tool's inputSchema does not compile; its arguments go unchecked"))
        .ok()
        .map(Arc::new);
    let mut cache = cache();
    if cache.len() >= CACHE_LIMIT {
        cache.clear();
    }
    cache.insert(key, built.clone());
    built
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::check;

    #[test]
    fn schemas_too_large_or_too_deep_are_named() {
        assert_eq!(super::too_large(&json!({"type": "object", "properties": {"q": {"type": "string"}}})), None);
        let mut deep = json!({"type": "string"});
        for _ in 0..40 {
            deep = json!({"type": "object", "properties": {"x": deep}});
        }
        assert!(super::too_large(&deep).unwrap().contains("deep"));
        let wide: serde_json::Map<String, serde_json::Value> =
            (0..3000).map(|i| (format!("field_{i}"), json!({"type": "string", "description": "a field"}))).collect();
        let wide = json!({"type": "object", "properties": wide});
        assert!(super::too_large(&wide).unwrap().contains("bytes"));
    }

    #[test]
    fn arguments_that_fit_pass_and_others_name_the_problem() {
        let schema = json!({"type": "object", "properties": {"quantity": {"type": "integer", "minimum": 1}},
            "required": ["quantity"]});
        assert!(check(&schema, &json!({"quantity": 2})).is_ok());
        let problem = check(&schema, &json!({"quantity": 0})).unwrap_err();
        assert!(problem.starts_with("/quantity:"), "{problem}");
        assert!(check(&schema, &json!({})).unwrap_err().contains("quantity"));
    }

    #[test]
    fn a_broken_schema_checks_nothing() {
        assert!(check(&json!({"type": 42}), &json!({"anything": true})).is_ok());
    }
}
