//! A server's form-mode `elicitation/create` as the widget's form, and the
//! user's answer checked against it before it reaches the server. The spec
//! keeps the requested schema flat: an object whose properties are a
//! string (with an optional `format`: email, uri, date, date-time), a
//! number or integer, a boolean, or a single choice (`enum`, with
//! `enumNames`, or `oneOf` of `{const, title}`), or several choices (an
//! array whose `items` are an `enum` or `anyOf` of `{const, title}`, with
//! `minItems`/`maxItems`). Anything else — nesting, arrays of anything else
//! — is not a form we draw: the request is declined.

use serde_json::{Map, Value};
use widget::wire::{ElicitationField, FieldKind, FieldOption};

/// Most fields a form may have.
const MAX_FIELDS: usize = 20;
/// Longest text of a label, a description or an option, in characters.
const MAX_TEXT: usize = 200;
/// Longest answer to a text field, in characters.
const MAX_ANSWER: usize = 2000;
/// The formats a text field may have.
const FORMATS: &[&str] = &["email", "uri", "date", "date-time"];

fn text(value: Option<&Value>) -> Option<String> {
    let text: String = value?.as_str()?.chars().filter(|c| !c.is_control()).take(MAX_TEXT).collect();
    Some(text).filter(|t| !t.trim().is_empty())
}

/// The form of a requested schema, its fields in `order` (the server's:
/// names it does not list follow, in the schema's); `None` when it is not
/// one we draw.
pub fn form(schema: &Value, order: &[String]) -> Option<Vec<ElicitationField>> {
    if schema.get("type").and_then(Value::as_str) != Some("object") {
        return None;
    }
    let properties = schema.get("properties")?.as_object()?;
    if properties.is_empty() || properties.len() > MAX_FIELDS {
        return None;
    }
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map_or(Vec::new(), |r| r.iter().filter_map(Value::as_str).collect());
    let position = |name: &str| order.iter().position(|o| o == name).unwrap_or(usize::MAX);
    let mut named: Vec<(&String, &Value)> = properties.iter().collect();
    named.sort_by_key(|(name, _)| position(name));
    named.into_iter().map(|(name, property)| field(name, property, required.contains(&name.as_str()))).collect()
}

fn field(name: &str, property: &Value, required: bool) -> Option<ElicitationField> {
    if name.is_empty() || name.chars().count() > 64 || name.chars().any(char::is_control) {
        return None;
    }
    let number = |key: &str| property.get(key).and_then(Value::as_f64);
    let length = |key: &str| property.get(key).and_then(Value::as_u64);
    let mut options = Vec::new();
    let kind = match property.get("type").and_then(Value::as_str)? {
        "string" if property.get("enum").is_some() => {
            let values = property.get("enum")?.as_array()?;
            let names = property.get("enumNames").and_then(Value::as_array);
            for (i, value) in values.iter().enumerate() {
                let value = value.as_str()?.to_owned();
                let label = text(names.and_then(|n| n.get(i))).unwrap_or_else(|| value.clone());
                options.push(FieldOption { value, label });
            }
            FieldKind::Choice
        }
        "string" if property.get("oneOf").is_some() => {
            for option in property.get("oneOf")?.as_array()? {
                let value = option.get("const")?.as_str()?.to_owned();
                let label = text(option.get("title")).unwrap_or_else(|| value.clone());
                options.push(FieldOption { value, label });
            }
            FieldKind::Choice
        }
        "string" => FieldKind::Text,
        "array" => {
            let items = property.get("items")?;
            if let Some(values) = items.get("enum").and_then(Value::as_array) {
                for value in values {
                    let value = value.as_str()?.to_owned();
                    options.push(FieldOption { label: value.clone(), value });
                }
            } else {
                for option in items.get("anyOf").or_else(|| items.get("oneOf"))?.as_array()? {
                    let value = option.get("const")?.as_str()?.to_owned();
                    let label = text(option.get("title")).unwrap_or_else(|| value.clone());
                    options.push(FieldOption { value, label });
                }
            }
            FieldKind::Choices
        }
        "number" => FieldKind::Number,
        "integer" => FieldKind::Integer,
        "boolean" => FieldKind::Boolean,
        _ => return None,
    };
    if matches!(kind, FieldKind::Choice | FieldKind::Choices) && (options.is_empty() || options.len() > 100) {
        return None;
    }
    let format = property.get("format").and_then(Value::as_str).map(str::to_owned);
    if format.as_deref().is_some_and(|f| !FORMATS.contains(&f)) {
        return None;
    }
    Some(ElicitationField {
        name: name.to_owned(),
        label: text(property.get("title")).unwrap_or_else(|| name.to_owned()),
        description: text(property.get("description")),
        kind,
        required,
        format,
        options,
        minimum: number("minimum"),
        maximum: number("maximum"),
        min_length: length("minLength"),
        max_length: length("maxLength"),
        min_items: length("minItems"),
        max_items: length("maxItems"),
        default: property
            .get("default")
            .filter(|d| {
                d.is_string()
                    || d.is_number()
                    || d.is_boolean()
                    || d.as_array().is_some_and(|items| items.iter().all(Value::is_string))
            })
            .cloned(),
    })
}

/// The user's answer, checked against the form: every required field,
/// each value of its kind and within its bounds, no other keys. The error
/// names the field.
pub fn check(fields: &[ElicitationField], content: &Map<String, Value>) -> Result<(), String> {
    if let Some(unknown) = content.keys().find(|k| !fields.iter().any(|f| &f.name == *k)) {
        return Err(format!("`{unknown}` is not a field of the form"));
    }
    for field in fields {
        let Some(value) = content.get(&field.name).filter(|v| !v.is_null()) else {
            if field.required {
                return Err(format!("`{}` is required", field.name));
            }
            continue;
        };
        value_fits(field, value).map_err(|why| format!("`{}`: {why}", field.name))?;
    }
    Ok(())
}

fn value_fits(field: &ElicitationField, value: &Value) -> Result<(), &'static str> {
    let within = |n: f64| field.minimum.is_none_or(|min| n >= min) && field.maximum.is_none_or(|max| n <= max);
    match field.kind {
        FieldKind::Boolean => value.is_boolean().then_some(()).ok_or("must be true or false"),
        FieldKind::Number => match value.as_f64() {
            Some(n) if within(n) => Ok(()),
            Some(_) => Err("out of range"),
            None => Err("must be a number"),
        },
        FieldKind::Integer => match value.as_i64() {
            Some(n) if within(n as f64) => Ok(()),
            Some(_) => Err("out of range"),
            None => Err("must be a whole number"),
        },
        FieldKind::Choice => {
            let chosen = value.as_str().ok_or("must be one of the options")?;
            field.options.iter().any(|o| o.value == chosen).then_some(()).ok_or("must be one of the options")
        }
        FieldKind::Choices => {
            let chosen = value.as_array().ok_or("must be a list of the options")?;
            let known = |c: &Value| c.as_str().is_some_and(|c| field.options.iter().any(|o| o.value == c));
            if !chosen.iter().all(known) {
                return Err("must be a list of the options");
            }
            let mut seen: Vec<&Value> = Vec::new();
            for c in chosen {
                if seen.contains(&c) {
                    return Err("an option is chosen twice");
                }
                seen.push(c);
            }
            let n = chosen.len() as u64;
            if field.min_items.is_some_and(|min| n < min) {
                return Err("too few chosen");
            }
            if field.max_items.is_some_and(|max| n > max) {
                return Err("too many chosen");
            }
            Ok(())
        }
        FieldKind::Text => {
            let text = value.as_str().ok_or("must be text")?;
            let length = text.chars().count() as u64;
            if length > MAX_ANSWER as u64 || field.max_length.is_some_and(|max| length > max) {
                return Err("too long");
            }
            if field.min_length.is_some_and(|min| length < min) {
                return Err("too short");
            }
            match field.format.as_deref() {
                Some("email") if !is_email(text) => Err("must be an email address"),
                Some("uri") if url::Url::parse(text).is_err() => Err("must be a URL"),
                Some("date")
                    if time::Date::parse(text, time::macros::format_description!("[year]-[month]-[day]")).is_err() =>
                {
                    Err("must be a date (YYYY-MM-DD)")
                }
                Some("date-time")
                    if time::OffsetDateTime::parse(text, &time::format_description::well_known::Rfc3339).is_err() =>
                {
                    Err("must be a date and time (RFC 3339)")
                }
                _ => Ok(()),
            }
        }
    }
}

fn is_email(text: &str) -> bool {
    let Some((local, domain)) = text.split_once('@') else { return false };
    !local.is_empty() && domain.contains('.') && !domain.starts_with('.') && !text.chars().any(char::is_whitespace)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn schema() -> Value {
        json!({"type": "object", "required": ["email", "size"], "properties": {
            "email": {"type": "string", "format": "email", "title": "Your email"},
            "size": {"type": "string", "enum": ["s", "m"], "enumNames": ["Small", "Medium"]},
            "colour": {"type": "string", "oneOf": [{"const": "red", "title": "Red"}]},
            "count": {"type": "integer", "minimum": 1, "maximum": 5, "default": 1},
            "gift": {"type": "boolean"},
            "note": {"type": "string", "maxLength": 10},
            "fish": {"type": "array", "minItems": 1, "maxItems": 2,
                     "items": {"anyOf": [{"const": "f1", "title": "Tuna"}, {"const": "f2", "title": "Trout"}, {"const": "f3"}]}}
        }})
    }

    #[test]
    fn the_form_keeps_the_servers_field_order() {
        // As rmcp reads a request: a sorted map, and the order it came in.
        let wire = r#"{"type": "object", "properties": {"size": {"type": "string", "enum": ["s", "m"]},
            "email": {"type": "string", "format": "email"}, "note": {"type": "string"}, "age": {"type": "integer"}}}"#;
        let schema: rmcp::model::ElicitationSchema = serde_json::from_str(wire).unwrap();
        let order = schema.property_order.clone().unwrap();
        let value = serde_json::to_value(&schema).unwrap();

        let names = |fields: Vec<ElicitationField>| fields.into_iter().map(|f| f.name).collect::<Vec<_>>();
        assert_eq!(names(form(&value, &order).unwrap()), ["size", "email", "note", "age"]);
        // A name the order does not list still shows, after the others.
        let partial = names(form(&value, &["note".into()]).unwrap());
        assert_eq!((partial[0].as_str(), partial.len()), ("note", 4), "{partial:?}");
    }

    #[test]
    fn the_flat_subset_becomes_a_form() {
        let fields = form(&schema(), &[]).unwrap();
        let email = fields.iter().find(|f| f.name == "email").unwrap();
        assert_eq!((email.label.as_str(), email.kind, email.required), ("Your email", FieldKind::Text, true));
        let size = fields.iter().find(|f| f.name == "size").unwrap();
        assert_eq!(size.options[1], FieldOption { value: "m".into(), label: "Medium".into() });
        let colour = fields.iter().find(|f| f.name == "colour").unwrap();
        assert_eq!((colour.kind, colour.options[0].label.as_str()), (FieldKind::Choice, "Red"));
        for unsupported in [
            json!({"type": "object", "properties": {"a": {"type": "object"}}}),
            json!({"type": "object", "properties": {"a": {"type": "array", "items": {"type": "string"}}}}),
            json!({"type": "object", "properties": {"a": {"type": "array", "items": {"enum": [1, 2]}}}}),
            json!({"type": "object", "properties": {"a": {"type": "string", "format": "ipv4"}}}),
            json!({"type": "array"}),
            json!({"type": "object", "properties": {}}),
        ] {
            assert_eq!(form(&unsupported, &[]), None, "{unsupported}");
        }
    }

    #[test]
    fn an_answer_is_checked_field_by_field() {
        let fields = form(&schema(), &[]).unwrap();
        let ok = json!({"email": "a@b.example", "size": "m", "count": 3, "gift": true, "fish": ["f2"]});
        let fish = fields.iter().find(|f| f.name == "fish").unwrap();
        assert_eq!((fish.kind, fish.options[2].label.as_str(), fish.max_items), (FieldKind::Choices, "f3", Some(2)));
        assert_eq!(check(&fields, ok.as_object().unwrap()), Ok(()));
        for (bad, why) in [
            (json!({"size": "m"}), "`email` is required"),
            (json!({"email": "nope", "size": "m"}), "`email`: must be an email address"),
            (json!({"email": "a@b.example", "size": "xl"}), "`size`: must be one of the options"),
            (json!({"email": "a@b.example", "size": "m", "count": 9}), "`count`: out of range"),
            (json!({"email": "a@b.example", "size": "m", "count": 1.5}), "`count`: must be a whole number"),
            (json!({"email": "a@b.example", "size": "m", "note": "far too long"}), "`note`: too long"),
            (json!({"email": "a@b.example", "size": "m", "admin": true}), "`admin` is not a field of the form"),
            (json!({"email": "a@b.example", "size": "m", "fish": []}), "`fish`: too few chosen"),
            (json!({"email": "a@b.example", "size": "m", "fish": ["f1", "f2", "f3"]}), "`fish`: too many chosen"),
            (
                json!({"email": "a@b.example", "size": "m", "fish": ["f1", "f9"]}),
                "`fish`: must be a list of the options",
            ),
            (json!({"email": "a@b.example", "size": "m", "fish": ["f1", "f1"]}), "`fish`: an option is chosen twice"),
        ] {
            assert_eq!(check(&fields, bad.as_object().unwrap()), Err(why.to_owned()), "{bad}");
        }
    }
}
