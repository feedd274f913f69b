//! A tool's question as a form (an MCP server's elicitation): drawn on the
//! server, in the visitor's language, into the `elicitation` event's `html`
//! — the widget shows it as it is and never draws it (the form's code stays
//! out of its WASM; docs/benchmarks.md). Every text from the tool is
//! escaped; each control carries its field's name and kind
//! (`data-name`, `data-kind`), which is how the widget reads the answer.

use crate::html::{escape, number};
use crate::wire::i18n::Msg;
use crate::wire::{ElicitationField, ElicitationRequest, FieldKind};

/// The form's markup: the tool's words and fields are escaped text.
pub fn elicitation_form(request: &ElicitationRequest, t: &dyn Fn(Msg) -> String) -> String {
    use std::fmt::Write;
    let word = |m: Msg| escape(&t(m));
    let mut html = format!(
        "<section id=\"ca-elicit\" class=\"ca-action ca-elicit\" role=\"group\" aria-labelledby=\"ca-elicit-title\" \
         tabindex=\"-1\"><h2 id=\"ca-elicit-title\" class=\"ca-action-title\">{}</h2>\
         <p class=\"ca-elicit-message\">{}</p><form id=\"ca-elicit-form\" class=\"ca-elicit-form\">",
        word(Msg::ElicitTitle),
        escape(&request.message)
    );
    for (i, field) in request.fields.iter().enumerate() {
        html.push_str(&field_markup(i, field));
    }
    let _ = write!(
        html,
        "</form><div class=\"ca-action-buttons\">\
         <button type=\"button\" class=\"ca-button\" data-action=\"elicit-send\" data-focus=\"send\">{}</button>\
         <button type=\"button\" class=\"ca-button ca-secondary\" data-action=\"elicit-decline\" data-focus=\"decline\">{}</button>\
         <button type=\"button\" class=\"ca-button ca-secondary\" data-action=\"elicit-cancel\" data-focus=\"cancel\">{}</button>\
         </div></section>",
        word(Msg::ElicitSend),
        word(Msg::ElicitDecline),
        word(Msg::Cancel)
    );
    html
}

/// One field: its label, its control (named `ca-f-{i}`), its description.
fn field_markup(i: usize, field: &ElicitationField) -> String {
    use std::fmt::Write;
    let id = format!("ca-f-{i}");
    let required = if field.required { " required aria-required=\"true\"" } else { "" };
    let mark = if field.required { " <span aria-hidden=\"true\">*</span>" } else { "" };
    let described = field.description.as_ref().map(|_| format!(" aria-describedby=\"{id}-d\"")).unwrap_or_default();
    // How the widget reads the control's value into the answer.
    let date_time = if field.format.as_deref() == Some("date-time") { " data-format=\"date-time\"" } else { "" };
    let described =
        format!("{described} data-name=\"{}\" data-kind=\"{}\"{date_time}", escape(&field.name), field.kind.as_str());
    let default = |v: &serde_json::Value| match v {
        serde_json::Value::String(s) => escape(s),
        serde_json::Value::Number(n) => n.as_f64().map(number).unwrap_or_default(),
        _ => String::new(),
    };
    let value = field
        .default
        .as_ref()
        .map(default)
        .filter(|v| !v.is_empty())
        .map(|v| format!(" value=\"{v}\""))
        .unwrap_or_default();
    let bound = |name: &str, n: Option<f64>| n.map(|n| format!(" {name}=\"{}\"", number(n))).unwrap_or_default();
    let length = |name: &str, n: Option<u64>| n.map(|n| format!(" {name}=\"{n}\"")).unwrap_or_default();
    let label = format!("<label for=\"{id}\">{}{mark}</label>", escape(&field.label));
    let control = match field.kind {
        FieldKind::Boolean => {
            let checked = if field.default == Some(serde_json::Value::Bool(true)) { " checked" } else { "" };
            format!(
                "<input id=\"{id}\" name=\"{id}\" type=\"checkbox\" data-focus=\"{id}\"{checked}{described}> {label}"
            )
        }
        FieldKind::Choice => {
            let mut options = String::from("<option value=\"\"></option>");
            for option in &field.options {
                let selected = if field.default.as_ref().and_then(|d| d.as_str()) == Some(&option.value) {
                    " selected"
                } else {
                    ""
                };
                let _ = write!(
                    options,
                    "<option value=\"{}\"{selected}>{}</option>",
                    escape(&option.value),
                    escape(&option.label)
                );
            }
            format!(
                "{label}<select id=\"{id}\" name=\"{id}\" data-focus=\"{id}\"{required}{described}>{options}</select>"
            )
        }
        FieldKind::Choices => {
            let chosen = |value: &str| {
                field
                    .default
                    .as_ref()
                    .and_then(|d| d.as_array())
                    .is_some_and(|d| d.iter().any(|c| c.as_str() == Some(value)))
            };
            let mut options = String::new();
            for option in &field.options {
                let selected = if chosen(&option.value) { " selected" } else { "" };
                let _ = write!(
                    options,
                    "<option value=\"{}\"{selected}>{}</option>",
                    escape(&option.value),
                    escape(&option.label)
                );
            }
            let size = field.options.len().min(6);
            format!(
                "{label}<select id=\"{id}\" name=\"{id}\" multiple size=\"{size}\" data-focus=\"{id}\"{required}{described}>{options}</select>"
            )
        }
        FieldKind::Number | FieldKind::Integer => {
            let step = if field.kind == FieldKind::Integer { "1" } else { "any" };
            format!(
                "{label}<input id=\"{id}\" name=\"{id}\" type=\"number\" step=\"{step}\" data-focus=\"{id}\" data-keep=\"{id}\"{}{}{required}{described}{value}>",
                bound("min", field.minimum),
                bound("max", field.maximum)
            )
        }
        FieldKind::Text => {
            let kind = match field.format.as_deref() {
                Some("email") => "email",
                Some("uri") => "url",
                Some("date") => "date",
                Some("date-time") => "datetime-local",
                _ => "text",
            };
            format!(
                "{label}<input id=\"{id}\" name=\"{id}\" type=\"{kind}\" data-focus=\"{id}\" data-keep=\"{id}\"{}{}{required}{described}{value}>",
                length("minlength", field.min_length),
                length("maxlength", field.max_length.or(Some(2000)))
            )
        }
    };
    let description = field
        .description
        .as_ref()
        .map(|d| format!("<span id=\"{id}-d\" class=\"ca-elicit-hint\">{}</span>", escape(d)))
        .unwrap_or_default();
    format!("<div class=\"ca-elicit-field\">{control}{description}</div>")
}

#[cfg(test)]
mod tests {
    use super::elicitation_form as markup;
    use crate::wire::i18n::Msg;

    fn english(m: Msg) -> String {
        let catalogue: std::collections::HashMap<String, String> =
            serde_json::from_str(include_str!("../i18n/en.json")).unwrap();
        catalogue[m.key()].clone()
    }
    use crate::wire::{ElicitationField, ElicitationRequest, FieldKind, FieldOption};

    fn field(name: &str, kind: FieldKind) -> ElicitationField {
        ElicitationField {
            name: name.into(),
            label: format!("<b>{name}</b>"),
            description: None,
            kind,
            required: false,
            format: None,
            options: Vec::new(),
            minimum: None,
            maximum: None,
            min_length: None,
            max_length: None,
            min_items: None,
            max_items: None,
            default: None,
        }
    }

    #[test]
    fn the_tools_words_are_text_and_each_kind_has_its_control() {
        let mut size = field("size", FieldKind::Choice);
        size.required = true;
        size.options = vec![FieldOption { value: "m\"".into(), label: "<i>Medium</i>".into() }];
        let mut email = field("email", FieldKind::Text);
        email.format = Some("email".into());
        email.description = Some("We write once".into());
        let mut count = field("count", FieldKind::Integer);
        count.minimum = Some(1.0);
        let mut fish = field("fish", FieldKind::Choices);
        fish.options = vec![FieldOption { value: "f1".into(), label: "Tuna".into() }];
        fish.default = Some(serde_json::json!(["f1"]));
        let request = ElicitationRequest {
            elicitation_id: "eli_1".into(),
            call_id: "c".into(),
            name: "choose".into(),
            message: "<script>alert(1)</script> Which size?".into(),
            fields: vec![size, email, count, field("gift", FieldKind::Boolean), fish],
            html: String::new(),
        };
        let html = markup(&request, &english);
        assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt; Which size?"), "{html}");
        assert!(!html.contains("<script>") && !html.contains("<b>") && !html.contains("<i>"), "{html}");
        assert!(
            html.contains(
                r#"<select id="ca-f-0" name="ca-f-0" data-focus="ca-f-0" required aria-required="true" data-name="size" data-kind="choice">"#
            ),
            "{html}"
        );
        assert!(html.contains(r#"<option value="m&quot;">&lt;i&gt;Medium&lt;/i&gt;</option>"#), "{html}");
        assert!(html.contains(r#"type="email""#) && html.contains(r#"aria-describedby="ca-f-1-d""#), "{html}");
        assert!(html.contains(r#"type="number" step="1""#) && html.contains(r#" min="1""#), "{html}");
        assert!(html.contains(r#"type="checkbox""#), "{html}");
        assert!(
            html.contains(r#"multiple size="1""#) && html.contains(r#"<option value="f1" selected>Tuna</option>"#),
            "{html}"
        );
        for action in ["elicit-send", "elicit-decline", "elicit-cancel"] {
            assert!(html.contains(&format!(r#"data-action="{action}""#)), "{action}");
        }
    }
}
