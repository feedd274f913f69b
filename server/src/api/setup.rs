//! Setup, server to server (assistant-api.md §1): workspaces (admin token)
//! and the `generic-rest` integration (workspace api key).

use axum::Json;
use axum::extract::{FromRequestParts, Path, State};
use axum::http::StatusCode;
use axum::http::request::Parts;
use serde::{Deserialize, Serialize};
use url::Url;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::state::ApiState;
use crate::checker::Report;
use crate::crypto::hash_api_key;
use crate::db::{self, NewIntegration};
use crate::host::{ExecutionScope, HostTarget, is_private};
use crate::http::{ApiError, ApiJson, bearer};
use crate::ids::new_id;
use crate::secret::Secret;
use crate::workspaces::{CreatedWorkspace, PROVIDER};

pub fn router() -> OpenApiRouter<ApiState> {
    OpenApiRouter::new()
        .routes(routes!(create_workspace, list_workspaces))
        .routes(routes!(connect_integration))
        .routes(routes!(check_integration))
        .routes(routes!(disconnect_integration))
}

#[derive(Deserialize, utoipa::ToSchema)]
struct CreateWorkspaceRequest {
    /// 1 to 200 characters, not only whitespace.
    #[schema(
        min_length = 1,
        max_length = 200,
        pattern = "[^\\t\\n\\u000b\\f\\r \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]"
    )]
    name: String,
    /// The origins whose pages may embed the widget.
    #[serde(default)]
    #[schema(value_type = Vec<Origin>)]
    allowed_origins: Vec<String>,
}

/// An origin: `http(s)://host[:port]`, nothing more (`https://shop.example`).
#[derive(utoipa::ToSchema)]
#[schema(pattern = "^https?://([A-Za-z0-9]+(-[A-Za-z0-9]+)*\\.)*[A-Za-z][A-Za-z0-9]*(-[A-Za-z0-9]+)*(:[0-9]{1,4})?$")]
#[allow(dead_code)] // describes the strings of `allowed_origins`
pub(super) struct Origin(String);

/// Creates a workspace and answers its two secrets, once.
///
/// The api key is stored hashed, the embed secret encrypted: neither can
/// be read again.
#[utoipa::path(
    post,
    path = "/v1/workspaces",
    tag = "setup",
    security(("admin" = [])),
    request_body = CreateWorkspaceRequest,
    responses((status = 201, description = "The workspace, with its api key and embed secret shown once", body = CreatedWorkspace)),
)]
async fn create_workspace(
    State(state): State<ApiState>,
    _admin: Admin,
    ApiJson(request): ApiJson<CreateWorkspaceRequest>,
) -> Result<(StatusCode, Json<CreatedWorkspace>), ApiError> {
    let name = valid_name(&request.name)?;
    let origins = request.allowed_origins.iter().map(|o| parse_origin(o)).collect::<Result<Vec<_>, _>>()?;
    let created = state.workspaces.create(name, &origins).await?;
    Ok((StatusCode::CREATED, Json(created)))
}

/// The operator's list: the newest workspaces first.
#[derive(Serialize, utoipa::ToSchema)]
struct WorkspaceList {
    /// At most the newest 1000.
    items: Vec<WorkspaceSummary>,
}

#[derive(Serialize, utoipa::ToSchema)]
struct WorkspaceSummary {
    id: String,
    name: String,
    /// RFC 3339, UTC.
    created_at: String,
    /// The origins whose pages may embed its widget.
    allowed_origins: Vec<String>,
    /// Its tool sources' names (`generic-rest`, MCP servers), in the order connected.
    integrations: Vec<String>,
    /// Conversations begun since the first of this month (UTC).
    conversations_this_month: u64,
}

/// The workspaces on this server, for the operator: each with its origins,
/// its integrations and the conversations begun this month (UTC). Never a
/// secret.
#[utoipa::path(
    get,
    path = "/v1/workspaces",
    tag = "setup",
    security(("admin" = [])),
    responses((status = 200, description = "The newest workspaces first", body = WorkspaceList)),
)]
async fn list_workspaces(State(state): State<ApiState>, _admin: Admin) -> Result<Json<WorkspaceList>, ApiError> {
    let rows = db::workspace_summaries(&state.pool, month_start(crate::ids::now_ms()), 1000).await?;
    let items = rows
        .into_iter()
        .map(|(row, integrations)| WorkspaceSummary {
            allowed_origins: serde_json::from_str(&row.allowed_origins).unwrap_or_default(),
            created_at: crate::ids::rfc3339(row.created_at),
            conversations_this_month: u64::try_from(row.conversations).unwrap_or(0),
            id: row.id,
            name: row.name,
            integrations,
        })
        .collect();
    Ok(Json(WorkspaceList { items }))
}

/// The first instant of `now_ms`'s month, UTC, in ms.
fn month_start(now_ms: i64) -> i64 {
    let Ok(now) = time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(now_ms) * 1_000_000) else { return 0 };
    let first = now.date().replace_day(1).unwrap_or(now.date());
    first.midnight().assume_utc().unix_timestamp() * 1000
}

/// A workspace's name, trimmed: 1 to 200 characters, not only whitespace.
pub(super) fn valid_name(raw: &str) -> Result<&str, ApiError> {
    let name = raw.trim();
    if name.is_empty() || raw.chars().count() > 200 {
        return Err(ApiError::BadRequest("name must be 1 to 200 characters".into()));
    }
    Ok(name)
}

/// `https://shop.example` exactly: scheme, host and optional port, no path.
pub(super) fn parse_origin(raw: &str) -> Result<String, ApiError> {
    let bad = || ApiError::BadRequest(format!("allowed_origins: `{raw}` is not an origin like https://shop.example"));
    let url = Url::parse(raw).map_err(|_| bad())?;
    // A host name of letters, digits, `-` and `.` (international names
    // arrive as punycode), or an IP address: what a browser's Origin holds.
    let host_ok = match url.host() {
        Some(url::Host::Domain(name)) => name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.'),
        Some(_) => true,
        None => false,
    };
    if !matches!(url.scheme(), "http" | "https")
        || !host_ok
        || url.path() != "/"
        || url.query().is_some()
        || !url.username().is_empty()
    {
        return Err(bad());
    }
    Ok(url.origin().ascii_serialization())
}

#[derive(Deserialize, utoipa::ToSchema)]
struct ConnectRequest {
    /// The tool server's base URL (remote-tools-contract.md): http(s), a
    /// host name and an optional port and path.
    #[schema(
        pattern = "^https?://([A-Za-z0-9]+(-[A-Za-z0-9]+)*\\.)*[A-Za-z][A-Za-z0-9]*(-[A-Za-z0-9]+)*(:[0-9]{1,4})?(/[A-Za-z0-9._~-]*)*$"
    )]
    base_url: String,
    /// The bearer the assistant sends the tool server.
    #[schema(min_length = 1)]
    secret: String,
    /// The tools the assistant may offer; empty: all of them.
    #[serde(default)]
    allowed_tools: Vec<String>,
}

#[derive(Serialize, utoipa::ToSchema)]
struct ConnectResponse {
    provider: &'static str,
    base_url: String,
    allowed_tools: Vec<String>,
    tools: Vec<String>,
    /// The host checker's report on the tool server (as `…/check` answers it).
    report: Report,
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
struct CheckRequest {
    /// The tool server's base URL, as for connect.
    #[schema(
        pattern = "^https?://([A-Za-z0-9]+(-[A-Za-z0-9]+)*\\.)*[A-Za-z][A-Za-z0-9]*(-[A-Za-z0-9]+)*(:[0-9]{1,4})?(/[A-Za-z0-9._~-]*)*$"
    )]
    base_url: String,
    /// The bearer the assistant would send it.
    #[schema(min_length = 1)]
    secret: String,
}

/// Runs the Remote Tools contract against a tool server, rule by rule.
///
/// Bearer required, tools listed and well-formed, context, each `get` tool
/// called once with arguments made from its schema, each other tool
/// previewed (never executed), errors in the `{error}` shape, display cards
/// and components against the sanitizer, timings, sizes, redirects and TLS.
/// Nothing is stored. A rule that fails says why, with the evidence.
#[utoipa::path(
    post,
    path = "/v1/integrations/{provider}/check",
    tag = "setup",
    security(("api_key" = [])),
    params(("provider" = String, Path, description = "`generic-rest`, the one provider")),
    request_body = CheckRequest,
    responses((status = 200, description = "The checker's report, rule by rule (nothing is stored)", body = Report)),
)]
async fn check_integration(
    State(state): State<ApiState>,
    _workspace: WorkspaceKey,
    Path(provider): Path<String>,
    ApiJson(request): ApiJson<CheckRequest>,
) -> Result<Json<Report>, ApiError> {
    if provider != PROVIDER {
        return Err(ApiError::NotFound);
    }
    let target = checked_target(&state, &request.base_url, &request.secret).await?;
    Ok(Json(crate::checker::check(&state.host, &target).await))
}

/// A tool server's target after the checks every call to one passes: an
/// http(s) URL, a secret, and a public address unless private ones are allowed.
async fn checked_target(state: &ApiState, raw_base_url: &str, secret: &str) -> Result<HostTarget, ApiError> {
    let base_url = parse_base_url(raw_base_url)?;
    if secret.is_empty() {
        return Err(ApiError::BadRequest("secret must not be empty".into()));
    }
    if !state.allow_private_tool_hosts {
        refuse_private_host(&base_url, "CA_ALLOW_PRIVATE_TOOL_HOSTS").await?;
    }
    Ok(HostTarget { base_url, secret: Secret::new(secret.to_owned()), trusted: false })
}

/// Connects the workspace's tool server, after calling its `GET /tools` once.
///
/// `502 host_check_failed` when that call fails. Connecting again replaces
/// the connection.
#[utoipa::path(
    post,
    path = "/v1/integrations/{provider}/connect",
    tag = "setup",
    security(("api_key" = [])),
    params(("provider" = String, Path, description = "`generic-rest`, the one provider")),
    request_body = ConnectRequest,
    responses((status = 200, description = "The integration as connected: its tools and the checker's report", body = ConnectResponse)),
)]
async fn connect_integration(
    State(state): State<ApiState>,
    workspace: WorkspaceKey,
    Path(provider): Path<String>,
    ApiJson(request): ApiJson<ConnectRequest>,
) -> Result<Json<ConnectResponse>, ApiError> {
    if provider != PROVIDER {
        return Err(ApiError::NotFound);
    }
    let (target, tools) =
        check_tool_host(&state, &request.base_url, &request.secret, &request.allowed_tools, &workspace.id).await?;
    let report = crate::checker::check(&state.host, &target).await;
    let base_url = target.base_url;
    db::upsert_integration(
        &state.pool,
        NewIntegration {
            workspace_id: &workspace.id,
            provider: PROVIDER,
            base_url: base_url.as_str(),
            secret_enc: &state.vault.seal(&request.secret),
            allowed_tools: &request.allowed_tools,
            builtin: false,
            preset: None,
            kind: db::KIND_REMOTE_TOOLS,
            trust_annotations: false,
            verbs: "{}",
        },
    )
    .await?;
    tracing::info!(workspace_id = %workspace.id, tools = tools.len(), "integration connected");
    let detail = serde_json::json!({
        "provider": PROVIDER, "base_url": base_url.as_str(), "allowed_tools": request.allowed_tools, "tools": tools.len(),
    });
    db::audit::record(&state.pool, "api-key", "integration.connected", Some(&workspace.id), None, &detail).await?;
    Ok(Json(ConnectResponse {
        provider: PROVIDER,
        base_url: base_url.into(),
        allowed_tools: request.allowed_tools,
        tools,
        report,
    }))
}

/// Checks a tool server before it is used: its base URL (not a private
/// address unless `CA_ALLOW_PRIVATE_TOOL_HOSTS`), a secret, and one call to
/// its `GET /tools` (`502 host_check_failed` when it fails) offering at
/// most as many tools as a model accepts. The target and the tools' names.
pub(super) async fn check_tool_host(
    state: &ApiState,
    raw_base_url: &str,
    secret: &str,
    allowed_tools: &[String],
    workspace_id: &str,
) -> Result<(HostTarget, Vec<String>), ApiError> {
    let target = checked_target(state, raw_base_url, secret).await?;
    let scope = ExecutionScope {
        workspace_id: workspace_id.to_owned(),
        external_user_id: "context-assistant-connect".into(),
        permissions: Vec::new(),
        request_id: new_id("req"),
    };
    let tools = state.host.list_tools(&target, &scope, allowed_tools).await.map_err(|error| {
        tracing::info!(workspace_id, %error, "connect: the host's GET /tools failed");
        ApiError::BadGateway("host_check_failed", format!("the host's GET /tools failed: {}", error.user_message()))
    })?;
    if tools.len() > crate::llm::wire::MAX_TOOLS {
        return Err(ApiError::BadRequest(format!(
            "the host offers {} tools; models accept at most {}: list the ones to offer in allowed_tools",
            tools.len(),
            crate::llm::wire::MAX_TOOLS
        )));
    }
    Ok((target, tools.into_iter().map(|t| t.name).collect()))
}

/// Disconnects one of the workspace's tool sources (its Remote Tools host,
/// or an MCP server by name).
///
/// Actions it previewed can no longer be applied (`integration_changed`).
#[utoipa::path(
    delete,
    path = "/v1/integrations/{provider}",
    tag = "setup",
    security(("api_key" = [])),
    params(("provider" = String, Path, description = "`generic-rest`, or an MCP server's name")),
    responses((status = 204, description = "Disconnected")),
)]
async fn disconnect_integration(
    State(state): State<ApiState>,
    workspace: WorkspaceKey,
    Path(provider): Path<String>,
) -> Result<StatusCode, ApiError> {
    if !db::delete_integration(&state.pool, &workspace.id, &provider).await? {
        return Err(ApiError::NotFound);
    }
    state.engine.sources.forget(&workspace.id, &provider);
    let detail = serde_json::json!({ "provider": provider });
    db::audit::record(&state.pool, "api-key", "integration.disconnected", Some(&workspace.id), None, &detail).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// A `base_url` (a tool host's, a model's): absolute http(s), a host, no user.
pub(super) fn parse_base_url(raw: &str) -> Result<Url, ApiError> {
    Url::parse(raw.trim())
        .ok()
        .filter(|u| matches!(u.scheme(), "http" | "https") && u.host_str().is_some() && u.username().is_empty())
        .ok_or_else(|| ApiError::BadRequest("base_url must be an absolute http(s) URL".into()))
}

/// Refuses hosts that resolve to loopback, private or link-local addresses
/// (`setting` allows them).
pub(super) async fn refuse_private_host(url: &Url, setting: &str) -> Result<(), ApiError> {
    let host = url.host_str().unwrap_or_default().trim_start_matches('[').trim_end_matches(']').to_owned();
    let port = url.port_or_known_default().unwrap_or(443);
    let addrs = tokio::net::lookup_host((host.as_str(), port))
        .await
        .map_err(|_| ApiError::BadRequest("base_url: the host name does not resolve".into()))?;
    for addr in addrs {
        if is_private(addr.ip()) {
            return Err(ApiError::BadRequest(format!(
                "base_url points at a private, loopback or link-local address (set {setting}=1 to allow)"
            )));
        }
    }
    Ok(())
}

/// The admin bearer (`CA_ADMIN_TOKEN`); without one, the operator's
/// endpoints (creating and listing workspaces) are disabled.
pub(super) struct Admin;

impl FromRequestParts<ApiState> for Admin {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &ApiState) -> Result<Self, Self::Rejection> {
        let Some(expected) = &state.admin_token else {
            return Err(ApiError::Forbidden(
                "admin_disabled",
                "the operator's endpoints (creating and listing workspaces) are disabled: CA_ADMIN_TOKEN is not set"
                    .into(),
            ));
        };
        match bearer(parts) {
            Some(token) if expected.matches(token) => Ok(Admin),
            _ => Err(ApiError::Unauthorized),
        }
    }
}

/// A workspace authenticated by its api key.
pub(super) struct WorkspaceKey {
    pub id: String,
    /// The key is the current one, not the previous one during a rotation's grace.
    pub current: bool,
    /// The presented key's hash.
    pub key_hash: String,
}

impl FromRequestParts<ApiState> for WorkspaceKey {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &ApiState) -> Result<Self, Self::Rejection> {
        let token = bearer(parts).ok_or(ApiError::Unauthorized)?;
        let key_hash = hash_api_key(token);
        let (id, current) = db::workspace_by_api_key_hash(&state.pool, &key_hash, crate::ids::now_ms())
            .await?
            .ok_or(ApiError::Unauthorized)?;
        Ok(WorkspaceKey { id, current, key_hash })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_month_starts_on_its_first_day_at_midnight_utc() {
        // 2026-12-04T05:06:07.089Z → 2026-12-01T00:00:00Z
        assert_eq!(super::month_start(1_796_360_767_089), 1_796_083_200_000);
        assert_eq!(super::month_start(1_796_083_200_000), 1_796_083_200_000);
    }

    #[test]
    fn origins_are_scheme_host_and_port_only() {
        assert_eq!(parse_origin("https://shop.example").unwrap(), "https://shop.example");
        assert_eq!(parse_origin("http://localhost:8080/").unwrap(), "http://localhost:8080");
        for bad in ["shop.example", "https://shop.example/path", "javascript:alert(1)", "https://u@shop.example"] {
            assert!(parse_origin(bad).is_err(), "{bad}");
        }
    }
}
