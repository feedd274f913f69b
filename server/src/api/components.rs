//! A component's own buttons (our extension of assistant-api.md §3):
//! `POST /v1/components/{id}/call` runs one of the tools the component
//! declared, for the caller, at once. The click is the user's own decision,
//! so there is no preview; in exchange only a tool the component declared,
//! the host still lists and the workspace allows may run this way — and
//! never a `delete`, which always takes the assistant's two confirmations.

use axum::Json;
use axum::extract::{Path, State};
use serde_json::{Value, json};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use widget::wire::{ComponentCall, ComponentCallResult, ComponentView};

use super::state::ApiState;
use crate::auth::Caller;
use crate::db::components;
use crate::host::{HostError, Verb};
use crate::http::{ApiError, ApiJson};
use crate::ids::new_id;
use crate::limits::Refusal;
use crate::usage::Metric;

pub fn router() -> OpenApiRouter<ApiState> {
    OpenApiRouter::new().routes(routes!(call_tool))
}

/// The host's failure, told in the language of the component's conversation.
async fn host_error(state: &ApiState, conversation_id: &str, error: HostError) -> ApiError {
    tracing::warn!(code = error.code(), %error, "component tool call failed at the host");
    match crate::db::conversation_lang(&state.pool, conversation_id).await {
        Ok(lang) => ApiError::BadGateway(error.code(), error.told_in(lang)),
        Err(e) => e.into(),
    }
}

/// Runs one of the tools a component declared, at the user's click.
///
/// Never a `delete`; 20 calls per 10 s per user by default (`429` with `Retry-After`). The answer holds
/// the component's new state when the tool's result carried one.
#[utoipa::path(
    post,
    path = "/v1/components/{id}/call",
    tag = "chat",
    security(("embed_token" = [])),
    params(("id" = String, Path, description = "The `component_id` of a `component` event")),
    request_body = ComponentCall,
    responses((status = 200, description = "The tool ran; the component's new state when its output carries one", body = ComponentCallResult)),
)]
async fn call_tool(
    State(state): State<ApiState>,
    caller: Caller,
    Path(id): Path<String>,
    ApiJson(call): ApiJson<ComponentCall>,
) -> Result<Json<ComponentCallResult>, ApiError> {
    let row = components::owned(&state.pool, &id, &caller.workspace_id, &caller.external_user_id)
        .await?
        .ok_or(ApiError::NotFound)?;
    if let Err(Refusal::TooMany { retry_after, .. }) = state.limits.admit_component_call(&caller).await? {
        return Err(ApiError::TooManyRequests(retry_after));
    }
    if !row.tools().contains(&call.tool) {
        return Err(ApiError::Forbidden("tool_not_declared", "this component cannot call that tool".into()));
    }
    let arguments = match call.arguments {
        Value::Null => json!({}),
        value @ Value::Object(_) => value,
        _ => return Err(ApiError::BadRequest("arguments must be a JSON object".into())),
    };
    // Components come from the Remote Tools host's results (an MCP
    // result has none), so their buttons call that host.
    let sources = state.workspaces.sources(&caller.workspace_id).await?;
    let Some(host) = sources.iter().find(|s| s.is_remote()) else {
        return Err(ApiError::BadGateway("no_host", "No app is connected to the assistant.".into()));
    };
    let request_id = new_id("call");
    let scope = caller.scope(&request_id);
    let tools = match state.engine.sources.tools(host, &scope).await {
        Ok(tools) => tools,
        Err(error) => return Err(host_error(&state, &row.conversation_id, error).await),
    };
    let Some(tool) = tools.iter().find(|t| t.name == call.tool) else {
        return Err(ApiError::Forbidden("tool_not_allowed", "that tool is not available".into()));
    };
    if tool.verb == Verb::Delete {
        return Err(ApiError::Forbidden(
            "delete_not_allowed",
            "a delete needs the assistant's two confirmations; ask in the chat".into(),
        ));
    }
    // A change without a preview only where the host opted in.
    if tool.verb != Verb::Get && !tool.direct {
        return Err(ApiError::Forbidden(
            "not_direct",
            "this tool changes data and the app does not let a component's buttons run it; ask in the chat".into(),
        ));
    }
    if let Err(problems) = crate::schema::check(&tool.input_schema.value(), &arguments) {
        return Err(ApiError::BadRequest(format!("the arguments do not fit the tool's inputSchema: {problems}")));
    }
    tracing::info!(component_id = %row.id, tool = %tool.name, request_id, "component tool call");
    let output = state.engine.sources.execute(host, &tool.name, &request_id, &arguments, &scope).await;
    state.limits.usage.count(&caller.workspace_id, Metric::ToolCalls, 1);
    let output = match output {
        Ok(output) => output,
        Err(error) => return Err(host_error(&state, &row.conversation_id, error).await),
    };
    let component = match crate::component::from_output(&output).filter(|c| c.kind == row.kind) {
        Some(c) => {
            components::refresh_kind(&state.pool, &row.conversation_id, &row.kind, &c.data.to_string()).await?;
            Some(ComponentView { component_id: row.id, call_id: row.call_id, kind: row.kind, data: c.data })
        }
        None => None,
    };
    Ok(Json(ComponentCallResult { component }))
}
