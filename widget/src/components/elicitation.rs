//! A tool's question while it runs (an MCP server's form): its words as
//! plain text, a field per value it asks for, and Send, Decline and Cancel.
//! The form is the widget's own chrome, drawn from the fields the server
//! read out of the tool's schema; the values are checked by the browser
//! (required, ranges, lengths, formats) and again by the server.
//!
//! Drawn as markup with one delegated listener (`region`). The form's
//! markup depends on the question alone, so a redraw never takes what was
//! typed or chosen; a failed answer is said beside it.

use leptos::prelude::*;

use super::region::{self, region};
use crate::html::escape;
use crate::intents;
use crate::state::Chat;
use crate::wire::i18n::Msg;
use crate::wire::{ElicitAction, ElicitationField, ElicitationRequest, FieldKind};

#[component]
pub fn ElicitationForm() -> impl IntoView {
    let chat = expect_context::<Chat>();
    let (form, note) = (NodeRef::new(), NodeRef::new());
    let first = region(form, move || {
        chat.elicitation.with(|e| e.as_ref().map(|e| markup(e, &|m| chat.t(m))).unwrap_or_default())
    });
    let first_note = region(note, move || {
        chat.elicitation_error
            .get()
            .map(|error| format!("<p class=\"ca-elicit-error\" role=\"alert\">{}</p>", escape(&error)))
            .unwrap_or_default()
    });
    let on_click = move |ev: leptos::ev::MouseEvent| {
        let Some((_, action)) = region::action_of(&ev) else { return };
        let answer = match action.as_str() {
            "elicit-send" => ElicitAction::Accept,
            "elicit-decline" => ElicitAction::Decline,
            "elicit-cancel" => ElicitAction::Cancel,
            _ => return,
        };
        intents::answer_elicitation(chat, answer);
    };
    view! {
        <div class="ca-part" node_ref=form inner_html=first on:click=on_click></div>
        <div class="ca-part" node_ref=note inner_html=first_note></div>
    }
}

/// The form's markup: the tool's words and fields are escaped text.
pub fn markup(request: &ElicitationRequest, t: &dyn Fn(Msg) -> String) -> String {
    use std::fmt::Write;
    let word = |m: Msg| escape(&t(m));
    let mut html = format!(
        "<section id=\"ca-elicit\" class=\"ca-elicit\" role=\"group\" aria-labelledby=\"ca-elicit-title\" \
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
    let default = |v: &serde_json::Value| match v {
        serde_json::Value::String(s) => escape(s),
        other => escape(&other.to_string()),
    };
    let value = field.default.as_ref().map(|v| format!(" value=\"{}\"", default(v))).unwrap_or_default();
    let bound = |name: &str, n: Option<f64>| n.map(|n| format!(" {name}=\"{n}\"")).unwrap_or_default();
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
    use super::super::region::english;
    use super::markup;
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
        let request = ElicitationRequest {
            elicitation_id: "eli_1".into(),
            call_id: "c".into(),
            name: "choose".into(),
            message: "<script>alert(1)</script> Which size?".into(),
            fields: vec![size, email, count, field("gift", FieldKind::Boolean)],
        };
        let html = markup(&request, &english);
        assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt; Which size?"), "{html}");
        assert!(!html.contains("<script>") && !html.contains("<b>") && !html.contains("<i>"), "{html}");
        assert!(
            html.contains(r#"<select id="ca-f-0" name="ca-f-0" data-focus="ca-f-0" required aria-required="true">"#),
            "{html}"
        );
        assert!(html.contains(r#"<option value="m&quot;">&lt;i&gt;Medium&lt;/i&gt;</option>"#), "{html}");
        assert!(html.contains(r#"type="email""#) && html.contains(r#"aria-describedby="ca-f-1-d""#), "{html}");
        assert!(html.contains(r#"type="number" step="1""#) && html.contains(r#" min="1""#), "{html}");
        assert!(html.contains(r#"type="checkbox""#), "{html}");
        for action in ["elicit-send", "elicit-decline", "elicit-cancel"] {
            assert!(html.contains(&format!(r#"data-action="{action}""#)), "{action}");
        }
    }
}
