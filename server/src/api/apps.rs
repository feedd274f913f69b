//! MCP Apps' side of the API (our extension; docs/api-extensions.md): the
//! bridge page that frames an app (`/widget/app/{id}`, app_frames.rs)
//! fetches it with `GET /v1/apps/{id}` and hands each request of the app to
//! `POST /v1/apps/{id}/requests`, where it is decided — never in the
//! browser. Both take the app token of the bridge's address, which speaks
//! for one app of one user.
//!
//! - `tools/call`: only a tool of the app's own MCP server whose
//!   `_meta.ui.visibility` lets apps call it, within the workspace's
//!   allowlist and its `inputSchema`; a `get` runs at once, anything else
//!   becomes the app's pending action, which the visitor applies in the
//!   assistant's chrome around the app (api/app_actions.rs).
//! - `resources/read`: of the app's own server only.
//! - `ui/message`: the visitor's next message, once the visitor let the
//!   conversation's apps write (asked the first time: `confirm`).
//! - `ui/open-link`: `http` and `https` only, shown to the visitor to
//!   confirm; anything else is refused.
//! - `ui/update-model-context`: kept per conversation (the last one, 4,000
//!   characters at most) and given to the next model step as quoted data.
//! - `notifications/message`: the server's log, at debug level.
//!
//! Each conversation's apps may ask 60 times per 10 s (`ui/message` 5 per
//! minute); beyond that the app is refused and the chat goes on.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::state::ApiState;
use crate::auth::Caller;
use crate::db::actions::{self, NewAction};
use crate::db::{self, apps::AppView};
use crate::engine::pending_action;
use crate::host::ToolSpec;
use crate::host::Verb;
use crate::http::{ApiError, ApiJson, bearer_in};
use crate::ids::new_id;
use crate::limits::Refusal;
use crate::sources::Source;

pub fn router() -> OpenApiRouter<ApiState> {
    OpenApiRouter::new().routes(routes!(get_app)).routes(routes!(app_request))
}

/// The protocol version of MCP Apps the bridge speaks.
pub const PROTOCOL_VERSION: &str = "2026-01-26";
/// Longest `ui/update-model-context` kept, in characters of its JSON.
const MAX_MODEL_CONTEXT_CHARS: usize = 4000;
/// Longest `ui/message`, like a message the visitor types.
const MAX_MESSAGE_CHARS: usize = 8000;
/// Longest log line from an app.
const MAX_LOG_CHARS: usize = 1000;

/// `GET /v1/apps/{id}`: what the bridge needs to show an app.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct AppFrame {
    pub component_id: String,
    /// The tool's title (or name).
    pub title: String,
    /// `toolInfo.tool` of the app's host context: the tool as its server lists it.
    #[schema(value_type = Object)]
    pub tool: Value,
    pub call_id: String,
    /// The app's HTML, as its server gave it (run only in the sandbox).
    pub html: String,
    /// The sandbox page to frame it in: on the sandbox origin, with the
    /// policy of the origins the app declared.
    pub sandbox_url: String,
    /// The tool's arguments (`ui/notifications/tool-input`).
    #[schema(value_type = Object)]
    pub input: Value,
    /// The tool's whole result (`ui/notifications/tool-result`); null
    /// until its tool answered.
    #[schema(value_type = Option<Object>)]
    pub result: Value,
    /// `running` (the tool has not answered yet: ask again), `done`, or
    /// `cancelled` (the turn ended first: `ui/notifications/tool-cancelled`).
    #[schema(pattern = "^(running|done|cancelled)$")]
    pub status: String,
    /// Why the tool was cancelled, for the app.
    pub cancel_reason: Option<String>,
    /// The `allow` of the app's frame: the browser features its resource
    /// asks for (`_meta.ui.permissions`) that the workspace lets apps have
    /// (`app_permissions`), e.g. `camera; clipboard-write`; empty: none.
    pub allow: String,
    /// The app's `_meta.ui.prefersBorder`, when it says.
    pub prefers_border: Option<bool>,
    /// The protocol version the bridge speaks.
    pub protocol_version: &'static str,
    /// The change the app asked for that still waits for the visitor's
    /// Apply, if any: after a reload the app's own request is gone, and the
    /// bridge shows the change again to be applied or cancelled.
    pub pending_action: Option<widget::wire::PendingAction>,
}

/// `POST /v1/apps/{id}/requests` body: one request of the app, as the
/// app sent it (JSON-RPC's `method` and `params`).
#[derive(Debug, Deserialize, utoipa::ToSchema)]
pub struct AppRequest {
    #[schema(max_length = 100)]
    pub method: String,
    #[serde(default)]
    #[schema(value_type = Object)]
    pub params: Value,
    /// Set by the bridge once the visitor said yes to what `confirm` asked.
    #[serde(default)]
    pub confirmed: bool,
}

/// The decision on an app's request: exactly one of `result` (the
/// JSON-RPC result for the app), `error` (the JSON-RPC error) or `confirm`
/// (ask the visitor first, then send the request again with `confirmed`).
#[derive(Debug, Default, Serialize, utoipa::ToSchema)]
pub struct AppAnswer {
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub result: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<AppError>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub confirm: Option<AppConfirm>,
    /// With `result` of a `ui/message`: the text the widget sends as the
    /// visitor's next message.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub send: Option<String>,
    /// Instead of `result` of a `tools/call` of a change: the app's pending
    /// action, for the visitor to apply (`/v1/apps/{id}/actions/…`) or
    /// cancel; the app's request waits for that answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub action: Option<widget::wire::PendingAction>,
}

/// A JSON-RPC error for the app.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct AppError {
    pub code: i64,
    pub message: String,
}

/// What the visitor is asked before an app's request goes on.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct AppConfirm {
    /// `message` (the app writes in the visitor's name) or `link`.
    pub kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// A link's address, as it will be opened (`http` or `https`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}

impl AppAnswer {
    pub(super) fn result(result: Value) -> Self {
        Self { result: Some(result), ..Self::default() }
    }

    /// The spec's implementation-defined error (`-32000`) with `message`.
    pub(super) fn refused(message: impl Into<String>) -> Self {
        Self::error(-32000, message)
    }

    fn error(code: i64, message: impl Into<String>) -> Self {
        Self { error: Some(AppError { code, message: message.into() }), ..Self::default() }
    }

    fn confirm(kind: &'static str, text: Option<String>, url: Option<String>) -> Self {
        Self { confirm: Some(AppConfirm { kind, text, url }), ..Self::default() }
    }
}

/// The app token's caller and the app, with the browser features its
/// workspace lets apps have, or `401`/`404`.
pub(super) async fn app_caller(
    state: &ApiState,
    headers: &HeaderMap,
    id: &str,
) -> Result<(Caller, AppView, Vec<String>), ApiError> {
    let Some(frames) = &state.engine.apps else { return Err(ApiError::NotFound) };
    let token = bearer_in(headers).ok_or(ApiError::Unauthorized)?;
    let claims = frames.verify(token, id).ok_or(ApiError::Unauthorized)?;
    let Some(workspace) = db::workspace(&state.pool, &claims.ws).await? else {
        return Err(ApiError::Unauthorized);
    };
    // A Caddie space: the grant as it stands now, like every chat call.
    if workspace.caddie_linked > 0 && !db::caddie::has_grant(&state.pool, &workspace.id, &claims.sub).await? {
        return Err(ApiError::Forbidden("no_access", "You no longer have access to this space.".into()));
    }
    let view = db::apps::owned(&state.pool, id, &claims.ws, &claims.sub).await?.ok_or(ApiError::NotFound)?;
    let caller = Caller {
        workspace_id: claims.ws,
        external_user_id: claims.sub,
        permissions: claims.permissions,
        limits: workspace.limits(),
        attachment_types: workspace.attachment_types(),
        setup: Some(workspace.setup_stamp()),
        knowledge: Some(workspace.turn_knowledge()),
    };
    Ok((caller, view, workspace.app_permissions()))
}

/// The app's MCP server as connected now (the same name; reconnected,
/// its newest version).
async fn source_of(state: &ApiState, view: &AppView) -> Result<Option<Source>, ApiError> {
    let sources = state.workspaces.sources(&view.workspace_id).await?;
    Ok(sources.into_iter().find(|s| s.name == view.integration && !s.is_remote()))
}

/// An app shown in a conversation: its HTML, where to frame it, and the
/// tool's input and result.
///
/// Takes the app token of the bridge page's address (app_token), not the embed token.
#[utoipa::path(
    get,
    path = "/v1/apps/{id}",
    tag = "chat",
    security(("app_token" = [])),
    params(("id" = String, Path, description = "The `component_id` of an `mcp-app` component")),
    responses(
        (status = 200, description = "The app", body = AppFrame),
        (status = 502, description = "The app's server cannot give its UI now", body = crate::http::ErrorBody),
    ),
)]
async fn get_app(
    State(state): State<ApiState>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Result<Json<AppFrame>, ApiError> {
    let (_caller, view, allowed) = app_caller(&state, &headers, &id).await?;
    let frames = state.engine.apps.as_ref().ok_or(ApiError::NotFound)?;
    let unavailable = || ApiError::BadGateway("app_unavailable", "This app cannot be shown right now.".into());
    let source = source_of(&state, &view).await?.ok_or_else(unavailable)?;
    let resource = state.engine.sources.app_resource(&source, &view.resource_uri).await.map_err(|error| {
        tracing::warn!(code = error.code(), %error, integration = %view.integration, "cannot read an app's UI");
        unavailable()
    })?;
    let listed = state.engine.sources.listed(&source).await.unwrap_or_default();
    let tool = listed
        .iter()
        .find(|t| t.get("name").and_then(Value::as_str) == Some(view.tool.as_str()))
        .map(|t| {
            let mut tool = serde_json::Map::new();
            for key in ["name", "title", "description", "inputSchema", "annotations"] {
                if let Some(value) = t.get(key) {
                    tool.insert(key.to_owned(), value.clone());
                }
            }
            Value::Object(tool)
        })
        .unwrap_or_else(|| json!({ "name": view.tool, "inputSchema": {"type": "object"} }));
    let title = tool.get("title").and_then(Value::as_str).unwrap_or(&view.tool).to_owned();
    let csp = crate::mcp::apps::Csp::of(&resource.ui);
    let granted = crate::mcp::apps::granted_permissions(&resource.ui, &allowed);
    let mut sandbox_url = url::Url::parse(&frames.sandbox_origin).map_err(anyhow::Error::from)?;
    sandbox_url.query_pairs_mut().append_pair("ws", &view.workspace_id).extend_pairs(csp.query());
    if !granted.is_empty() {
        sandbox_url.query_pairs_mut().append_pair("allow", &granted.join(" "));
    }
    let call_id = db::components::call_of(&state.pool, &id).await?.unwrap_or_default();
    let waiting = db::actions::open_of_app(&state.pool, &id, crate::ids::now_ms()).await?;
    Ok(Json(AppFrame {
        pending_action: waiting.as_ref().map(crate::engine::pending_action),
        component_id: id,
        title,
        tool,
        call_id,
        html: resource.html.clone(),
        sandbox_url: sandbox_url.to_string(),
        input: serde_json::from_str(&view.input).unwrap_or_else(|_| json!({})),
        result: match view.status.as_str() {
            db::apps::DONE => serde_json::from_str(&view.result).unwrap_or_else(|_| json!({"content": []})),
            _ => Value::Null,
        },
        status: view.status,
        cancel_reason: view.cancel_reason,
        allow: granted.join("; "),
        prefers_border: resource.ui.get("prefersBorder").and_then(Value::as_bool),
        protocol_version: PROTOCOL_VERSION,
    }))
}

/// Decides one request of an app: the answer for the app, or what to ask
/// the visitor first.
///
/// Takes the app token (app_token). `429` when the conversation's apps ask too often.
#[utoipa::path(
    post,
    path = "/v1/apps/{id}/requests",
    tag = "chat",
    security(("app_token" = [])),
    params(("id" = String, Path, description = "The `component_id` of an `mcp-app` component")),
    request_body = AppRequest,
    responses((status = 200, description = "The decision: a result, an error, or a question for the visitor", body = AppAnswer)),
)]
async fn app_request(
    State(state): State<ApiState>,
    headers: HeaderMap,
    Path(id): Path<String>,
    ApiJson(request): ApiJson<AppRequest>,
) -> Result<Json<AppAnswer>, ApiError> {
    let (caller, view, _) = app_caller(&state, &headers, &id).await?;
    let conversation = &view.conversation_id;
    if let Err(Refusal::TooMany { retry_after, .. }) = state.limits.admit_app_request(&caller, conversation).await? {
        return Err(ApiError::TooManyRequests(retry_after));
    }
    let params = &request.params;
    let answer = match request.method.as_str() {
        "tools/call" => call_tool(&state, &caller, &view, params).await?,
        "resources/read" => read_resource(&state, &view, params).await?,
        "ui/message" => {
            if let Err(Refusal::TooMany { retry_after, .. }) =
                state.limits.admit_app_message(&caller, conversation).await?
            {
                return Err(ApiError::TooManyRequests(retry_after));
            }
            message(&state, conversation, params, request.confirmed).await?
        }
        "ui/open-link" => open_link(params),
        "ui/update-model-context" => {
            let context = json!({
                "content": params.get("content").cloned().unwrap_or(Value::Null),
                "structuredContent": params.get("structuredContent").cloned().unwrap_or(Value::Null),
            })
            .to_string();
            if context.chars().count() > MAX_MODEL_CONTEXT_CHARS {
                AppAnswer::refused(format!("the model context is longer than {MAX_MODEL_CONTEXT_CHARS} characters"))
            } else {
                db::apps::set_model_context(&state.pool, conversation, &context, state.clock.now_ms()).await?;
                AppAnswer::result(json!({}))
            }
        }
        "notifications/message" => {
            let line: String =
                params.get("data").map(Value::to_string).unwrap_or_default().chars().take(MAX_LOG_CHARS).collect();
            let level = params.get("level").and_then(Value::as_str).unwrap_or("info");
            tracing::debug!(component_id = %id, integration = %view.integration, level = %level.chars().take(20).collect::<String>(), line, "an app's log");
            AppAnswer::result(json!({}))
        }
        _ => AppAnswer::error(-32601, "Method not found"),
    };
    Ok(Json(answer))
}

/// `tools/call` of an app: a tool of its own server that apps may call,
/// a `get` only.
async fn call_tool(state: &ApiState, caller: &Caller, view: &AppView, params: &Value) -> Result<AppAnswer, ApiError> {
    let Some(name) = params.get("name").and_then(Value::as_str) else {
        return Ok(AppAnswer::error(-32602, "params.name must be a tool's name"));
    };
    let arguments = match params.get("arguments") {
        None | Some(Value::Null) => json!({}),
        Some(value @ Value::Object(_)) => value.clone(),
        Some(_) => return Ok(AppAnswer::error(-32602, "params.arguments must be an object")),
    };
    let Some(source) = source_of(state, view).await? else {
        return Ok(AppAnswer::refused("the app's server is no longer connected"));
    };
    let tools = match state.engine.sources.app_tools(&source).await {
        Ok(tools) => tools,
        Err(error) => return Ok(AppAnswer::refused(error.for_model())),
    };
    let Some(tool) = tools.iter().find(|t| t.origin.name == name) else {
        tracing::info!(integration = %view.integration, tool = name, "an app asked for a tool it may not call");
        return Ok(AppAnswer::refused("this app may not call that tool"));
    };
    if let Err(problems) = crate::schema::check(&tool.input_schema.value(), &arguments) {
        return Ok(AppAnswer::error(-32602, format!("the arguments do not fit the tool's inputSchema: {problems}")));
    }
    if tool.verb != Verb::Get {
        return propose(state, caller, view, &source, tool, &arguments).await;
    }
    let request_id = new_id("app");
    let scope = caller.scope(&request_id);
    tracing::info!(component_id = %view.component_id, tool = name, request_id, "app tool call");
    let result = state.engine.sources.call_for_app(&source, name, &arguments, &scope).await;
    state.limits.usage.count(&caller.workspace_id, crate::usage::Metric::ToolCalls, 1);
    Ok(match result {
        Ok(result) => AppAnswer::result(result),
        Err(error) => AppAnswer::refused(error.for_model()),
    })
}

/// Freezes an app's call of a change as the app's pending action: the
/// answer carries it for the bridge to show. One change of an app waits at
/// a time; a second is refused until the visitor answered the first.
async fn propose(
    state: &ApiState,
    caller: &Caller,
    view: &AppView,
    source: &Source,
    tool: &ToolSpec,
    arguments: &Value,
) -> Result<AppAnswer, ApiError> {
    let now = state.clock.now_ms();
    if actions::open_of_app(&state.pool, &view.component_id, now).await?.is_some() {
        return Ok(AppAnswer::refused("another change of this app is waiting for the visitor"));
    }
    let call_id = new_id("app");
    let scope = caller.scope(&call_id);
    let preview = match state.engine.sources.stage(source, tool, &call_id, arguments, &scope).await {
        Ok(preview) => crate::engine::shown_preview(&preview),
        Err(error) => return Ok(AppAnswer::refused(error.for_model())),
    };
    let action = actions::insert(
        &state.pool,
        NewAction {
            conversation_id: &view.conversation_id,
            workspace_id: &caller.workspace_id,
            external_user_id: &caller.external_user_id,
            permissions: &caller.permissions,
            call_id: &call_id,
            tool: &tool.origin.name,
            verb: tool.verb,
            arguments,
            preview: &preview,
            ttl_ms: state.engine.limits.action_ttl.as_millis() as i64,
            integration_url: Some(source.url.as_str()),
            integration_version: Some(source.version),
            replaces: None,
            integration: &source.name,
            tool_digest: &tool.origin.digest,
            app_component_id: Some(&view.component_id),
        },
        now,
    )
    .await?;
    crate::metrics::tool_call(Some(tool.verb), "previewed");
    tracing::info!(action_id = %action.id, component_id = %view.component_id, tool = %tool.origin.name, "an app asked for a change");
    Ok(AppAnswer { action: Some(pending_action(&action)), ..AppAnswer::default() })
}

/// `resources/read` of an app: its own server's resources only.
async fn read_resource(state: &ApiState, view: &AppView, params: &Value) -> Result<AppAnswer, ApiError> {
    let Some(uri) = params.get("uri").and_then(Value::as_str).filter(|u| !u.is_empty() && u.len() <= 2048) else {
        return Ok(AppAnswer::error(-32602, "params.uri must be a resource's URI"));
    };
    let Some(source) = source_of(state, view).await? else {
        return Ok(AppAnswer::refused("the app's server is no longer connected"));
    };
    Ok(match state.engine.sources.read_for_app(&source, uri).await {
        Ok(result) => AppAnswer::result(result),
        Err(error) => AppAnswer::refused(error.for_model()),
    })
}

/// `ui/message`: its text blocks as the visitor's next message.
async fn message(state: &ApiState, conversation: &str, params: &Value, confirmed: bool) -> Result<AppAnswer, ApiError> {
    if params.get("role").and_then(Value::as_str).is_some_and(|r| r != "user") {
        return Ok(AppAnswer::error(-32602, "an app writes as the user only"));
    }
    let blocks: Vec<&Value> = match params.get("content") {
        Some(Value::Array(blocks)) => blocks.iter().collect(),
        Some(block @ Value::Object(_)) => vec![block],
        _ => Vec::new(),
    };
    let text: Vec<&str> = blocks
        .iter()
        .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
        .filter_map(|b| b.get("text").and_then(Value::as_str))
        .collect();
    let text = text.join("\n").trim().to_owned();
    if text.is_empty() {
        return Ok(AppAnswer::error(-32602, "the message has no text"));
    }
    if text.chars().count() > MAX_MESSAGE_CHARS {
        return Ok(AppAnswer::error(-32602, format!("a message is {MAX_MESSAGE_CHARS} characters at most")));
    }
    if !db::apps::messages_allowed(&state.pool, conversation).await? {
        if !confirmed {
            return Ok(AppAnswer::confirm("message", Some(text), None));
        }
        db::apps::allow_messages(&state.pool, conversation, state.clock.now_ms()).await?;
    }
    Ok(AppAnswer { result: Some(json!({})), send: Some(text), ..AppAnswer::default() })
}

/// `ui/open-link`: an `http` or `https` address, for the visitor to confirm.
fn open_link(params: &Value) -> AppAnswer {
    let Some(raw) = params.get("url").and_then(Value::as_str) else {
        return AppAnswer::error(-32602, "params.url must be a URL");
    };
    match url::Url::parse(raw) {
        Ok(url)
            if matches!(url.scheme(), "http" | "https")
                && url.host().is_some()
                && url.username().is_empty()
                && url.password().is_none()
                && url.as_str().len() <= 2048 =>
        {
            AppAnswer::confirm("link", None, Some(url.to_string()))
        }
        _ => AppAnswer::refused("only http and https links open"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_http_links_are_offered_to_the_visitor() {
        for bad in [
            "javascript:alert(1)",
            "JAVASCRIPT:alert(1)",
            "data:text/html,<script>x</script>",
            "file:///etc/passwd",
            "https://user:pw@shop.example/",
            "vbscript:x",
            "//shop.example",
            "not a url",
            " javascript:alert(1)",
        ] {
            let answer = open_link(&json!({ "url": bad }));
            assert!(answer.confirm.is_none() && answer.error.is_some(), "{bad}");
        }
        let answer = open_link(&json!({ "url": "https://modelcontextprotocol.io/" }));
        assert_eq!(answer.confirm.unwrap().url.as_deref(), Some("https://modelcontextprotocol.io/"));
    }
}
