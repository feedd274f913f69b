//! The API's OpenAPI 3.1 document, served at `GET /v1/openapi.json`. It is
//! generated from the handlers themselves: each route is registered
//! through `utoipa_axum::routes!`, which reads the path, method, body and
//! answers from the handler's `#[utoipa::path]`, so a route cannot exist
//! without its description, nor the other way round.

use serde_json::{Value, json};
use utoipa::openapi::OpenApi;
use utoipa::openapi::security::{Http, HttpAuthScheme, SecurityScheme};
use widget::wire::{
    ComponentEvent, DisplayCards, ElicitationRequest, EventKind, FinishedMessage, PendingAction, TextDelta,
    ToolActivity, TurnDone, TurnError, TurnStarted,
};

use crate::http::ErrorBody;

/// The document's fixed parts; the paths come from the routers.
#[derive(utoipa::OpenApi)]
#[openapi(
    info(
        title = "Context Assistant API",
        description = "Setup (admin token, workspace api key) and the chat API (embed token) \
                       of Context Assistant. Every error answers `{\"error\", \"code\"}`.",
        license(name = "MIT OR Apache-2.0"),
    ),
    components(schemas(
        ErrorBody, TurnStarted, TextDelta, ToolActivity, DisplayCards, ComponentEvent, PendingAction,
        ElicitationRequest, FinishedMessage, TurnDone, TurnError,
    )),
    tags(
        (name = "setup", description = "Server to server: workspaces and the tool host"),
        (name = "chat", description = "From the widget or any client, with an embed token"),
        (name = "knowledge", description = "Server to server: the help center the assistant answers from"),
        (name = "tests", description = "Server to server: assistant test suites run against the workspace"),
    ),
    modifiers(&SecuritySchemes),
)]
pub struct ApiDoc;

/// The bearer credentials of the API.
struct SecuritySchemes;

impl utoipa::Modify for SecuritySchemes {
    fn modify(&self, openapi: &mut OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        for (name, description) in [
            ("admin", "`CA_ADMIN_TOKEN`"),
            ("api_key", "the workspace's api key, shown once when it was created"),
            ("embed_token", "an embed token (HS256 JWT) minted by the host's backend with the embed secret"),
            (
                "app_token",
                "an MCP App's token: minted by the assistant for one app of one user, found after `#` in the \
                 `src` of an `mcp-app` component (a few hours)",
            ),
        ] {
            let mut http = Http::new(HttpAuthScheme::Bearer);
            http.description = Some(description.to_owned());
            components.add_security_scheme(name, SecurityScheme::Http(http));
        }
    }
}

/// What a turn's stream says: each event's SSE name and the schema of its
/// `data:` JSON. A kind added to [`EventKind`] fails to compile here until
/// it is described.
fn event_data_schema(kind: EventKind) -> &'static str {
    match kind {
        EventKind::Turn => "TurnStarted",
        EventKind::Text => "TextDelta",
        EventKind::Tool => "ToolActivity",
        EventKind::Display => "DisplayCards",
        EventKind::Component => "ComponentEvent",
        EventKind::PendingAction => "PendingAction",
        EventKind::Elicitation => "ElicitationRequest",
        EventKind::Message => "FinishedMessage",
        EventKind::Done => "TurnDone",
        EventKind::Error => "TurnError",
    }
}

/// One server-sent event of a turn, as OpenAPI 3.1 describes an item of
/// `text/event-stream`: its `event` names it, its `data` is JSON of that
/// event's schema (`contentMediaType` + `contentSchema`).
fn turn_stream_event() -> Value {
    let events: Vec<Value> = EventKind::ALL
        .iter()
        .map(|kind| {
            json!({
                "type": "object",
                "required": ["event", "data"],
                "properties": {
                    "event": { "const": kind.as_str() },
                    "data": {
                        "type": "string",
                        "contentMediaType": "application/json",
                        "contentSchema": { "$ref": format!("#/components/schemas/{}", event_data_schema(*kind)) },
                    },
                },
            })
        })
        .collect();
    json!({
        "description": "One event of a turn's stream. `turn` comes first and `done` last; \
                        `: ping` comments keep an idle stream open.",
        "oneOf": events,
    })
}

/// The routers' document, completed: the turn's events, and every
/// operation's `4XX` and `5XX` answers as an [`ErrorBody`].
pub fn finish(doc: OpenApi) -> Value {
    let mut doc = serde_json::to_value(doc).expect("the OpenAPI document serializes");
    doc["components"]["schemas"]["TurnStreamEvent"] = turn_stream_event();
    let error = json!({
        "description": "An error: `{\"error\", \"code\"}`",
        "content": { "application/json": { "schema": { "$ref": "#/components/schemas/ErrorBody" } } },
    });
    for item in doc["paths"].as_object_mut().into_iter().flat_map(|paths| paths.values_mut()) {
        for operation in item.as_object_mut().into_iter().flat_map(|item| item.values_mut()) {
            let Some(responses) = operation.get_mut("responses").and_then(Value::as_object_mut) else { continue };
            for answer in responses.values_mut() {
                if let Some(stream) = answer.pointer_mut("/content/text~1event-stream") {
                    stream["schema"] = json!({ "$ref": "#/components/schemas/TurnStreamEvent" });
                }
            }
            for range in ["4XX", "5XX"] {
                responses.entry(range).or_insert_with(|| error.clone());
            }
        }
    }
    doc
}

/// The `text/event-stream` answer of a route that streams a turn.
pub const TURN_STREAM: &str = "The turn's events as server-sent events, each a `TurnStreamEvent`.";
