//! MCP Apps (the `io.modelcontextprotocol/ui` extension, issue #31): a
//! tool names a `ui://` resource of type `text/html;profile=mcp-app` in
//! `_meta.ui.resourceUri`; the assistant reads it from the server (never
//! from the browser) and keeps it per connection. What is here so far: the
//! resource as read and checked; the sandbox and the bridge follow.

use serde_json::Value;

/// The extension's name in the client's capabilities.
pub const EXTENSION: &str = "io.modelcontextprotocol/ui";
/// The only type of a UI resource.
pub const MIME_TYPE: &str = "text/html;profile=mcp-app";

/// A UI resource as read.
#[derive(Clone, Debug, PartialEq)]
pub struct AppResource {
    pub uri: String,
    pub html: String,
    /// `_meta.ui` of the resource (its `csp`, `permissions`, `domain`,
    /// `prefersBorder`), as the server gave it: checked where it is used.
    pub ui: Value,
}

/// True for a URI an app's UI may have: `ui://` and something after it.
pub fn is_ui_uri(uri: &str) -> bool {
    uri.strip_prefix("ui://").is_some_and(|rest| !rest.is_empty() && !rest.chars().any(char::is_control))
}

/// The UI resource `uri` out of a `resources/read` result: the content of
/// that URI, of the app type, as text (or base64 `blob` of UTF-8).
pub fn ui_resource(uri: &str, result: &Value) -> Result<AppResource, String> {
    let contents = result.get("contents").and_then(Value::as_array).ok_or("the answer has no contents")?;
    let content = contents
        .iter()
        .find(|c| c.get("uri").and_then(Value::as_str) == Some(uri))
        .ok_or("the answer has no content of that uri")?;
    let mime = content.get("mimeType").and_then(Value::as_str).unwrap_or("");
    if mime != MIME_TYPE {
        return Err(format!("the resource is `{mime}`, not `{MIME_TYPE}`"));
    }
    let html = match (content.get("text").and_then(Value::as_str), content.get("blob").and_then(Value::as_str)) {
        (Some(text), _) => text.to_owned(),
        (None, Some(blob)) => {
            use base64::Engine;
            let bytes = base64::engine::general_purpose::STANDARD.decode(blob).map_err(|_| "the blob is not base64")?;
            String::from_utf8(bytes).map_err(|_| "the blob is not UTF-8")?
        }
        (None, None) => return Err("the resource has neither text nor blob".into()),
    };
    let ui = content.pointer("/_meta/ui").cloned().unwrap_or(Value::Null);
    Ok(AppResource { uri: uri.to_owned(), html, ui })
}

/// The UI resource a listed tool ships, if any: `_meta.ui.resourceUri`
/// (or the older flat key `_meta["ui/resourceUri"]`).
pub fn resource_uri(tool: &Value) -> Option<&str> {
    tool.pointer("/_meta/ui/resourceUri").or_else(|| tool.pointer("/_meta/ui~1resourceUri")).and_then(Value::as_str)
}

/// Whether a tool is offered to the model: unless its `_meta.ui.visibility`
/// says who may call it and leaves the model out.
pub fn visible_to_model(tool: &Value) -> bool {
    match tool.pointer("/_meta/ui/visibility").and_then(Value::as_array) {
        Some(visibility) => visibility.iter().any(|v| v == "model"),
        None => true,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_ui_resource_is_read_only_of_its_uri_and_type() {
        let uri = "ui://clock/app.html";
        let ok = json!({"contents": [{"uri": uri, "mimeType": MIME_TYPE, "text": "<p>hi</p>",
                                      "_meta": {"ui": {"csp": {"connectDomains": []}}}}]});
        let resource = ui_resource(uri, &ok).unwrap();
        assert_eq!(resource.html, "<p>hi</p>");
        assert_eq!(resource.ui["csp"], json!({"connectDomains": []}));
        let blob = json!({"contents": [{"uri": uri, "mimeType": MIME_TYPE, "blob": "PHA+aGk8L3A+"}]});
        assert_eq!(ui_resource(uri, &blob).unwrap().html, "<p>hi</p>");
        for bad in [
            json!({"contents": [{"uri": uri, "mimeType": "text/html", "text": "x"}]}),
            json!({"contents": [{"uri": "ui://other", "mimeType": MIME_TYPE, "text": "x"}]}),
            json!({"contents": [{"uri": uri, "mimeType": MIME_TYPE}]}),
            json!({}),
        ] {
            assert!(ui_resource(uri, &bad).is_err(), "{bad}");
        }
        assert!(is_ui_uri(uri) && !is_ui_uri("https://x.example/app.html") && !is_ui_uri("ui://"));
    }

    #[test]
    fn an_app_only_tool_is_not_offered_to_the_model() {
        assert!(visible_to_model(&json!({"name": "t"})));
        assert!(visible_to_model(&json!({"_meta": {"ui": {"visibility": ["model", "app"]}}})));
        assert!(!visible_to_model(&json!({"_meta": {"ui": {"visibility": ["app"]}}})));
    }
}
