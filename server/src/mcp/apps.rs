//! MCP Apps (the `io.modelcontextprotocol/ui` extension, issue #31): a
//! tool names a `ui://` resource of type `text/html;profile=mcp-app` in
//! `_meta.ui.resourceUri`; the assistant reads it from the server (never
//! from the browser) and keeps it per connection. Here: the resource as
//! read and checked, who may call a tool, the browser features an app may
//! be granted, and the sandbox's policy built from its `_meta.ui.csp`
//! (each entry checked as an origin).

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

/// The browser features an app may ask for in `_meta.ui.permissions`: its
/// key there and the Permissions Policy feature it maps to (the `allow`
/// of the app's frame), in the order an `allow` lists them.
pub const PERMISSIONS: [(&str, &str); 4] = [
    ("camera", "camera"),
    ("microphone", "microphone"),
    ("geolocation", "geolocation"),
    ("clipboardWrite", "clipboard-write"),
];

/// Whether `feature` is one an app may be granted (`camera`, `microphone`,
/// `geolocation`, `clipboard-write`).
pub fn is_permission(feature: &str) -> bool {
    PERMISSIONS.iter().any(|(_, f)| *f == feature)
}

/// The features an app is granted: those its resource asks for (an
/// object under the key, as the spec has it) that the workspace lets apps
/// have, in [`PERMISSIONS`] order.
pub fn granted_permissions(ui: &Value, allowed: &[String]) -> Vec<&'static str> {
    PERMISSIONS
        .iter()
        .filter(|(key, feature)| {
            ui.pointer(&format!("/permissions/{key}")).is_some_and(Value::is_object)
                && allowed.iter().any(|a| a == feature)
        })
        .map(|(_, feature)| *feature)
        .collect()
}

/// Whether an app may call a tool: unless its `_meta.ui.visibility` says
/// who may and leaves apps out.
pub fn visible_to_app(tool: &Value) -> bool {
    match tool.pointer("/_meta/ui/visibility").and_then(Value::as_array) {
        Some(visibility) => visibility.iter().any(|v| v == "app"),
        None => true,
    }
}

/// A `tools/call` result as an app is given it: the spec's fields of a
/// `CallToolResult` (`content`, `structuredContent`, `isError`, `_meta`),
/// nothing else.
pub fn result_for_app(result: &Value) -> Value {
    let mut kept = serde_json::Map::new();
    for key in ["content", "structuredContent", "isError", "_meta"] {
        if let Some(value) = result.get(key) {
            kept.insert(key.to_owned(), value.clone());
        }
    }
    if !kept.contains_key("content") {
        kept.insert("content".into(), Value::Array(Vec::new()));
    }
    Value::Object(kept)
}

/// Most origins one list of `_meta.ui.csp` may name.
const MAX_ORIGINS: usize = 16;

/// The origins an app declared it needs (`_meta.ui.csp`), each checked.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Csp {
    /// `connectDomains`: what its scripts may fetch.
    pub connect: Vec<String>,
    /// `resourceDomains`: scripts, styles, images, fonts and media.
    pub resource: Vec<String>,
    /// `frameDomains`: what it may frame.
    pub frame: Vec<String>,
    /// `baseUriDomains`: what `<base href>` may name.
    pub base: Vec<String>,
}

impl Csp {
    /// The checked origins of a resource's `_meta.ui` (an entry that is
    /// not an origin is dropped and logged).
    pub fn of(ui: &Value) -> Csp {
        let list = |key: &str| -> Vec<String> {
            let entries = ui.pointer(&format!("/csp/{key}")).and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
            let mut kept: Vec<String> = Vec::new();
            for entry in entries {
                match entry.as_str().and_then(csp_origin) {
                    Some(origin) if kept.len() < MAX_ORIGINS && !kept.contains(&origin) => kept.push(origin),
                    Some(_) => {}
                    None => tracing::warn!(list = key, entry = %entry, "an app's CSP entry is not an origin: dropped"),
                }
            }
            kept
        };
        Csp {
            connect: list("connectDomains"),
            resource: list("resourceDomains"),
            frame: list("frameDomains"),
            base: list("baseUriDomains"),
        }
    }

    /// Each list's origins as they travel in the sandbox page's query.
    pub fn query(&self) -> Vec<(&'static str, String)> {
        [("connect", &self.connect), ("resource", &self.resource), ("frame", &self.frame), ("base", &self.base)]
            .into_iter()
            .filter(|(_, list)| !list.is_empty())
            .map(|(key, list)| (key, list.join(" ")))
            .collect()
    }

    /// The lists read back from the sandbox page's query, each entry
    /// checked again (the query is anyone's to write).
    pub fn from_query(pairs: &[(String, String)]) -> Csp {
        let list = |key: &str| -> Vec<String> {
            let mut kept: Vec<String> = Vec::new();
            for (_, value) in pairs.iter().filter(|(k, _)| k == key) {
                for origin in value.split(' ').filter_map(csp_origin) {
                    if kept.len() < MAX_ORIGINS && !kept.contains(&origin) {
                        kept.push(origin);
                    }
                }
            }
            kept
        };
        Csp { connect: list("connect"), resource: list("resource"), frame: list("frame"), base: list("base") }
    }

    /// The sandbox page's `Content-Security-Policy`: nothing but what the
    /// app declared, the spec's defaults for what it did not (no network,
    /// no frames), never plugins, forms that post nowhere, and framed only
    /// by `ancestors`. The app's own markup is inline, so inline scripts
    /// and styles run; the app's frame has no origin of its own (it is
    /// sandboxed without `allow-same-origin`) and inherits this policy.
    pub fn header(&self, ancestors: &[String]) -> String {
        let or_none = |list: &[String]| if list.is_empty() { "'none'".to_owned() } else { list.join(" ") };
        let with = |fixed: &str, list: &[String]| {
            if list.is_empty() { fixed.to_owned() } else { format!("{fixed} {}", list.join(" ")) }
        };
        let ancestors: Vec<String> = ancestors.iter().filter_map(|a| csp_origin(a)).collect();
        format!(
            "default-src 'none'; script-src {}; style-src {}; img-src {}; font-src {}; media-src {}; \
             connect-src {}; frame-src {}; base-uri {}; object-src 'none'; form-action 'none'; \
             worker-src 'none'; frame-ancestors {}",
            with("'unsafe-inline'", &self.resource),
            with("'unsafe-inline'", &self.resource),
            with("data: blob:", &self.resource),
            with("data:", &self.resource),
            with("data: blob:", &self.resource),
            or_none(&self.connect),
            or_none(&self.frame),
            or_none(&self.base),
            or_none(&ancestors),
        )
    }
}

/// An entry of an app's CSP lists, when it is an origin: `http(s)` or
/// `ws(s)`, a host (its first label may be `*` alone), an optional port,
/// nothing else (no path, quotes, `;`, spaces or other wildcards), as
/// lowercase text without a trailing slash.
pub fn csp_origin(entry: &str) -> Option<String> {
    let entry = entry.strip_suffix('/').unwrap_or(entry);
    let (scheme, rest) = entry.split_once("://")?;
    let scheme = scheme.to_ascii_lowercase();
    if !matches!(scheme.as_str(), "https" | "http" | "wss" | "ws") || rest.is_empty() || rest.len() > 253 {
        return None;
    }
    // No IPv6 literal: its colons would need their own reading, and apps name hosts.
    let (host, port) = match rest.split_once(':') {
        Some((host, port)) => (host, Some(port)),
        None => (rest, None),
    };
    if let Some(port) = port
        && (port.is_empty()
            || port.len() > 5
            || !port.bytes().all(|b| b.is_ascii_digit())
            || port.parse::<u16>().is_err())
    {
        return None;
    }
    let bare = host.strip_prefix("*.").unwrap_or(host);
    let label_ok = |label: &str| {
        !label.is_empty()
            && label.len() <= 63
            && label.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
            && !label.starts_with('-')
            && !label.ends_with('-')
    };
    if bare.is_empty() || !bare.split('.').all(label_ok) {
        return None;
    }
    let port = port.map(|p| format!(":{p}")).unwrap_or_default();
    Some(format!("{scheme}://{}{port}", host.to_ascii_lowercase()))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn an_app_gets_only_the_features_it_asks_for_and_the_workspace_allows() {
        let ui = json!({"permissions": {"camera": {}, "clipboardWrite": {}, "microphone": true, "usb": {}}});
        assert!(granted_permissions(&ui, &[]).is_empty(), "nothing by default");
        let all: Vec<String> = PERMISSIONS.iter().map(|(_, f)| (*f).to_owned()).collect();
        // `microphone: true` is not the spec's shape; `usb` is no feature of ours.
        assert_eq!(granted_permissions(&ui, &all), ["camera", "clipboard-write"]);
        assert_eq!(granted_permissions(&ui, &["clipboard-write".into(), "geolocation".into()]), ["clipboard-write"]);
        assert!(granted_permissions(&Value::Null, &all).is_empty());
        assert!(is_permission("clipboard-write") && !is_permission("clipboardWrite") && !is_permission("usb"));
    }

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

    #[test]
    fn an_apps_csp_keeps_only_origins() {
        for ok in ["https://api.example.com", "https://*.cdn.example", "http://127.0.0.1:8080", "wss://live.example/"] {
            assert!(csp_origin(ok).is_some(), "{ok}");
        }
        assert_eq!(csp_origin("HTTPS://API.Example.com/").as_deref(), Some("https://api.example.com"));
        for bad in [
            "*",
            "https://*",
            "https://a.*.example",
            "https://a.example/path",
            "https://a.example; script-src *",
            "'unsafe-eval'",
            "https://a example",
            "data:",
            "javascript://x",
            "https://a.example:99999",
            "https://a.example:",
            "https://'self'",
            "https://a.example?x",
            "https://user@a.example",
            "https://",
            "https://*.*.example",
            "https://a.example:80/x",
        ] {
            assert_eq!(csp_origin(bad), None, "{bad}");
        }
    }

    #[test]
    fn the_sandbox_policy_is_the_apps_declared_origins_or_nothing() {
        let none = Csp::of(&Value::Null);
        let header = none.header(&["https://assistant.example".into(), "https://shop.example".into()]);
        for part in [
            "default-src 'none'",
            "connect-src 'none'",
            "frame-src 'none'",
            "object-src 'none'",
            "base-uri 'none'",
            "script-src 'unsafe-inline';",
            "form-action 'none'",
            "frame-ancestors https://assistant.example https://shop.example",
        ] {
            assert!(header.contains(part), "{part} in {header}");
        }
        let ui = serde_json::json!({"csp": {
            "connectDomains": ["https://api.example", "https://x.example; script-src *", 7],
            "resourceDomains": ["https://cdn.example"],
        }});
        let csp = Csp::of(&ui);
        assert_eq!(csp.connect, vec!["https://api.example"]);
        let header = csp.header(&[]);
        assert!(header.contains("connect-src https://api.example;"), "{header}");
        assert!(header.contains("script-src 'unsafe-inline' https://cdn.example;"), "{header}");
        assert!(header.ends_with("frame-ancestors 'none'"), "{header}");
        // Through the query and back, hostile additions dropped.
        let mut pairs: Vec<(String, String)> = csp.query().into_iter().map(|(k, v)| (k.to_owned(), v)).collect();
        pairs.push(("connect".into(), "'unsafe-eval' https://*".into()));
        assert_eq!(Csp::from_query(&pairs), csp);
    }
}
