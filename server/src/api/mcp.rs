//! MCP servers as a workspace's tool sources (docs/mcp.md), server to server
//! (workspace api key): `POST /v1/integrations/mcp/connect` connects one
//! under a name of the host's choosing, after a handshake and a listing of
//! its tools; `POST /v1/integrations/mcp/check` reports on one and stores
//! nothing. Listing, showing, narrowing and disconnecting are the same as
//! for the Remote Tools host (`integrations.rs`, `setup.rs`).

use std::collections::BTreeMap;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use widget::wire::Verb;

use super::setup::{WorkspaceKey, parse_base_url, refuse_private_host};
use super::state::ApiState;
use crate::checker::Report;
use crate::db::{self, KIND_MCP, NewIntegration};
use crate::host::ToolSpec;
use crate::http::{ApiError, ApiJson};
use crate::mcp::client::McpError;
use crate::sources::{McpServer, usable_name};

pub fn router() -> OpenApiRouter<ApiState> {
    OpenApiRouter::new().routes(routes!(connect_mcp)).routes(routes!(check_mcp))
}

/// Most headers a host may give a server.
const MAX_HEADERS: usize = 16;

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
struct McpConnectRequest {
    /// The integration's name: 1 to 32 of `a-z 0-9 -`, a letter first;
    /// not `generic-rest` or `mcp`. Connecting a name again replaces it.
    #[schema(pattern = "^[a-z][a-z0-9-]{0,31}$")]
    name: String,
    /// The server's Streamable HTTP endpoint: http(s), a public address
    /// unless `CA_ALLOW_PRIVATE_TOOL_HOSTS`. Redirects are not followed.
    url: String,
    /// Sent with every request (e.g. `{"Authorization": "Bearer …"}`):
    /// sealed at rest, never shown, never logged. At most 16.
    #[serde(default)]
    headers: BTreeMap<String, String>,
    /// The tools the assistant may offer (the server's names); empty: all of them.
    #[serde(default)]
    allowed_tools: Vec<String>,
    /// Let the server's annotations decide: `readOnlyHint: true` tools run
    /// by themselves. Off by default (the spec calls annotations untrusted):
    /// every tool then waits for Apply.
    #[serde(default)]
    trust_annotations: bool,
    /// The host's own verb per tool, which wins over any annotation.
    #[serde(default)]
    verbs: BTreeMap<String, Verb>,
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
struct McpCheckRequest {
    /// The server's endpoint, as for connect.
    url: String,
    /// The headers it would be sent, as for connect.
    #[serde(default)]
    headers: BTreeMap<String, String>,
    /// As for connect: which tools count as reads the report calls.
    #[serde(default)]
    trust_annotations: bool,
    #[serde(default)]
    verbs: BTreeMap<String, Verb>,
}

/// One of the server's tools as the assistant classified it.
#[derive(Serialize, utoipa::ToSchema)]
pub(super) struct McpToolShown {
    /// The server's name of the tool.
    name: String,
    title: Option<String>,
    /// `get` runs by itself; `create` and `update` wait for Apply; `delete`
    /// needs two confirmations.
    verb: Verb,
    /// It ships its own interactive UI (MCP Apps: `_meta.ui.resourceUri`).
    app: bool,
}

#[derive(Serialize, utoipa::ToSchema)]
struct McpConnectResponse {
    provider: String,
    tools: Vec<McpToolShown>,
    /// The connect report: handshake, the tools as a model sees them,
    /// their classification, and the timing of reads.
    report: Report,
}

/// Connects an MCP server as one of the workspace's tool sources.
///
/// The server is connected (protocol `2025-11-25`), its tools listed and
/// classified, and the ones that run by themselves called once for the
/// report. `502 mcp_unreachable` when it cannot be reached, `400
/// mcp_unauthorized` when it answered 401 or 403 (its status in the
/// message), `502 mcp_protocol` when it is not an MCP server or its
/// handshake failed, `504 mcp_timeout` when it did not answer in time.
#[utoipa::path(
    post,
    path = "/v1/integrations/mcp/connect",
    tag = "setup",
    security(("api_key" = [])),
    request_body = McpConnectRequest,
    responses((status = 200, description = "Connected: its tools as classified, and the connect report", body = McpConnectResponse)),
)]
async fn connect_mcp(
    State(state): State<ApiState>,
    workspace: WorkspaceKey,
    ApiJson(request): ApiJson<McpConnectRequest>,
) -> Result<Json<McpConnectResponse>, ApiError> {
    let name = valid_integration_name(&request.name)?;
    super::integrations::valid_tool_names("allowed_tools", &request.allowed_tools, usable_name)?;
    valid_verbs(&request.verbs)?;
    let server =
        checked_server(&state, &request.url, &request.headers, request.trust_annotations, &request.verbs).await?;
    let (tools, report) = inspect(&state, name, &server, &request.allowed_tools, &workspace.id).await?;
    if tools.len() > crate::llm::wire::MAX_TOOLS {
        return Err(ApiError::BadRequest(format!(
            "the server offers {} tools; models accept at most {}: list the ones to offer in allowed_tools",
            tools.len(),
            crate::llm::wire::MAX_TOOLS
        )));
    }
    let headers = serde_json::to_string(&request.headers).map_err(anyhow::Error::from)?;
    let verbs: BTreeMap<&String, &str> = request.verbs.iter().map(|(tool, verb)| (tool, verb.as_str())).collect();
    db::upsert_integration(
        &state.pool,
        NewIntegration {
            workspace_id: &workspace.id,
            provider: name,
            base_url: server.url.as_str(),
            secret_enc: &state.vault.seal(&headers),
            allowed_tools: &request.allowed_tools,
            builtin: false,
            preset: None,
            kind: KIND_MCP,
            trust_annotations: request.trust_annotations,
            verbs: &serde_json::to_string(&verbs).map_err(anyhow::Error::from)?,
        },
    )
    .await?;
    // The connections of what this name was before close; the next turn
    // opens one to the server as connected now.
    state.engine.sources.forget(&workspace.id, name);
    tracing::info!(workspace_id = %workspace.id, integration = name, tools = tools.len(), "MCP server connected");
    let detail = serde_json::json!({
        "provider": name, "kind": KIND_MCP, "url": server.url.as_str(),
        "headers": request.headers.keys().collect::<Vec<_>>(), "allowed_tools": request.allowed_tools,
        "trust_annotations": request.trust_annotations, "verbs": verbs, "tools": tools.len(),
    });
    db::audit::record(&state.pool, "api-key", "integration.connected", Some(&workspace.id), None, &detail).await?;
    Ok(Json(McpConnectResponse { provider: name.to_owned(), tools: tools.iter().map(shown).collect(), report }))
}

/// Reports on an MCP server as connect would, and stores nothing.
///
/// The same errors as connect.
#[utoipa::path(
    post,
    path = "/v1/integrations/mcp/check",
    tag = "setup",
    security(("api_key" = [])),
    request_body = McpCheckRequest,
    responses((status = 200, description = "The connect report (nothing is stored)", body = Report)),
)]
async fn check_mcp(
    State(state): State<ApiState>,
    workspace: WorkspaceKey,
    ApiJson(request): ApiJson<McpCheckRequest>,
) -> Result<Json<Report>, ApiError> {
    valid_verbs(&request.verbs)?;
    let server =
        checked_server(&state, &request.url, &request.headers, request.trust_annotations, &request.verbs).await?;
    let (_, report) = inspect(&state, "check", &server, &[], &workspace.id).await?;
    Ok(Json(report))
}

/// The integration's name, or why not.
fn valid_integration_name(name: &str) -> Result<&str, ApiError> {
    let well_formed = (1..=32).contains(&name.len())
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
    if !well_formed {
        return Err(ApiError::BadRequest("name must be 1 to 32 of a-z 0-9 -, a letter first".into()));
    }
    if name == crate::workspaces::PROVIDER || name == "mcp" || name == crate::knowledge::INTEGRATION {
        return Err(ApiError::BadRequest(format!("name `{name}` is reserved")));
    }
    Ok(name)
}

fn valid_verbs(verbs: &BTreeMap<String, Verb>) -> Result<(), ApiError> {
    let names: Vec<String> = verbs.keys().cloned().collect();
    super::integrations::valid_tool_names("verbs", &names, usable_name)
}

/// The server as it would be dialled, after the checks every MCP server
/// passes: an http(s) URL, a public address unless private ones are
/// allowed, headers that can be sent (never echoed).
async fn checked_server(
    state: &ApiState,
    url: &str,
    headers: &BTreeMap<String, String>,
    trust_annotations: bool,
    verbs: &BTreeMap<String, Verb>,
) -> Result<McpServer, ApiError> {
    let url = parse_base_url(url).map_err(|_| ApiError::BadRequest("url must be an absolute http(s) URL".into()))?;
    if headers.len() > MAX_HEADERS {
        return Err(ApiError::BadRequest(format!("headers: at most {MAX_HEADERS}")));
    }
    let headers: Vec<(String, String)> = headers.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    crate::mcp::client::headers(&headers).map_err(|why| ApiError::BadRequest(format!("headers: {why}")))?;
    if !state.allow_private_tool_hosts {
        refuse_private_host(&url, "CA_ALLOW_PRIVATE_TOOL_HOSTS").await.map_err(|_| {
            ApiError::BadRequest(
                "url points at a private, loopback or link-local address (set CA_ALLOW_PRIVATE_TOOL_HOSTS=1 to allow)"
                    .into(),
            )
        })?;
    }
    Ok(McpServer { url, headers, trust_annotations, verbs: verbs.clone() })
}

/// Connects to the server once, lists and classifies its tools within
/// `allowed`, and writes the report (`Sources::inspect`).
async fn inspect(
    state: &ApiState,
    name: &str,
    server: &McpServer,
    allowed: &[String],
    workspace_id: &str,
) -> Result<(Vec<ToolSpec>, Report), ApiError> {
    state.engine.sources.inspect(name, server, allowed, workspace_id).await.map_err(|e| mcp_error(&e))
}

/// A failure to reach or use the server, named by its cause.
fn mcp_error(error: &McpError) -> ApiError {
    tracing::info!(%error, code = error.code(), "connecting an MCP server failed");
    let (status, message) = match error {
        McpError::Unreachable(_) => {
            (StatusCode::BAD_GATEWAY, "the MCP server cannot be reached: check the url and that it is up".to_owned())
        }
        McpError::Unauthorized(code) => (
            StatusCode::BAD_REQUEST,
            format!("the MCP server answered {code}: check the headers (its Authorization, say)"),
        ),
        McpError::Protocol(why) => (
            StatusCode::BAD_GATEWAY,
            format!("not an MCP server, or its handshake failed: {}", why.chars().take(200).collect::<String>()),
        ),
        McpError::Timeout(after) => {
            (StatusCode::GATEWAY_TIMEOUT, format!("the MCP server did not answer within {} ms", after.as_millis()))
        }
        McpError::Failed(_) => (StatusCode::BAD_GATEWAY, "the MCP server failed to list its tools".to_owned()),
        McpError::Headers(why) => (StatusCode::BAD_REQUEST, format!("headers: {why}")),
    };
    ApiError::Upstream { status, code: error.code(), message }
}

pub(super) fn shown(tool: &ToolSpec) -> McpToolShown {
    McpToolShown {
        name: tool.origin.name.clone(),
        title: tool.origin.title.clone(),
        verb: tool.verb,
        app: tool.origin.app.is_some(),
    }
}
