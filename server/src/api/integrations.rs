//! A workspace's tool sources, as its host sees them (api key auth): list,
//! show (never a secret or a header's value) and change what the
//! integrations `POST /v1/integrations/{provider}/connect` (the Remote Tools
//! host) and `POST /v1/integrations/mcp/connect` (MCP servers) made.
//! Disconnecting is in `setup.rs`; every change is in the audit trail.

use std::collections::BTreeMap;

use axum::Json;
use axum::extract::{Path, State};
use serde::{Deserialize, Serialize};
use serde_json::json;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use widget::wire::Verb;

use super::setup::WorkspaceKey;
use super::state::ApiState;
use crate::db;
use crate::http::{ApiError, ApiJson};
use crate::ids::rfc3339;

pub fn router() -> OpenApiRouter<ApiState> {
    OpenApiRouter::new().routes(routes!(list_integrations)).routes(routes!(show_integration, update_integration))
}

/// A connected tool source: never its secret, nor its headers' values.
#[derive(Serialize, utoipa::ToSchema)]
pub(super) struct ShownIntegration {
    /// Its name: `generic-rest` for the Remote Tools host, the host's own for an MCP server.
    provider: String,
    /// `remote-tools` or `mcp`.
    kind: String,
    /// The Remote Tools base URL, or the MCP server's endpoint.
    base_url: String,
    /// The tools the assistant may offer; empty: all of them.
    allowed_tools: Vec<String>,
    /// The operator's tool-host preset it follows (a Caddie space's), if any.
    preset: Option<String>,
    /// When it was connected (RFC 3339).
    connected_at: String,
    /// MCP: the names of the headers sent to the server (never their values).
    #[serde(skip_serializing_if = "Option::is_none")]
    headers: Option<Vec<String>>,
    /// MCP: whether the server's annotations decide which tools run by themselves.
    #[serde(skip_serializing_if = "Option::is_none")]
    trust_annotations: Option<bool>,
    /// MCP: the host's own verb per tool.
    #[serde(skip_serializing_if = "Option::is_none")]
    verbs: Option<BTreeMap<String, Verb>>,
}

impl ShownIntegration {
    /// The row as shown; an MCP server's header names are read from its
    /// sealed headers.
    fn of(row: db::IntegrationRow, vault: &crate::crypto::Vault) -> Self {
        let mcp = row.kind == db::KIND_MCP;
        let headers = mcp.then(|| {
            let opened = vault.open(&row.secret_enc).ok();
            let headers: BTreeMap<String, String> =
                opened.and_then(|h| serde_json::from_str(h.expose()).ok()).unwrap_or_default();
            headers.into_keys().collect()
        });
        Self {
            allowed_tools: row.allowed_tools(),
            trust_annotations: mcp.then_some(row.trust_annotations != 0),
            verbs: mcp.then(|| row.verbs()),
            headers,
            kind: row.kind,
            provider: row.provider,
            base_url: row.base_url,
            preset: row.preset,
            connected_at: rfc3339(row.created_at),
        }
    }
}

#[derive(Serialize, utoipa::ToSchema)]
struct IntegrationList {
    integrations: Vec<ShownIntegration>,
}

/// The workspace's integrations: its Remote Tools host and its MCP servers.
#[utoipa::path(
    get,
    path = "/v1/integrations",
    tag = "setup",
    security(("api_key" = [])),
    responses((status = 200, description = "The workspace's integrations, in the order they were connected", body = IntegrationList)),
)]
async fn list_integrations(
    State(state): State<ApiState>,
    workspace: WorkspaceKey,
) -> Result<Json<IntegrationList>, ApiError> {
    let rows = db::integrations(&state.pool, &workspace.id).await?;
    let integrations = rows.into_iter().map(|row| ShownIntegration::of(row, &state.vault)).collect();
    Ok(Json(IntegrationList { integrations }))
}

/// One integration, without its secret or headers.
#[utoipa::path(
    get,
    path = "/v1/integrations/{provider}",
    tag = "setup",
    security(("api_key" = [])),
    params(("provider" = String, Path, description = "`generic-rest`, or an MCP server's name")),
    responses((status = 200, description = "The integration: its allowlist and classification settings (never a secret)", body = ShownIntegration)),
)]
async fn show_integration(
    State(state): State<ApiState>,
    workspace: WorkspaceKey,
    Path(provider): Path<String>,
) -> Result<Json<ShownIntegration>, ApiError> {
    Ok(Json(ShownIntegration::of(connected(&state, &workspace, &provider).await?, &state.vault)))
}

async fn connected(state: &ApiState, workspace: &WorkspaceKey, provider: &str) -> Result<db::IntegrationRow, ApiError> {
    db::integration(&state.pool, &workspace.id, provider).await?.ok_or(ApiError::NotFound)
}

/// What to change of an integration; what is left out stays.
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
struct IntegrationPatch {
    /// The tools the assistant may offer (empty: all of them), at most 128,
    /// no repeats: names of 1 to 64 letters, digits, `_` and `-` for the
    /// Remote Tools host, the server's own names for an MCP server.
    #[schema(max_items = 128)]
    allowed_tools: Option<Vec<String>>,
    /// MCP only: let the server's annotations decide which tools run by themselves.
    trust_annotations: Option<bool>,
    /// MCP only: the host's own verb per tool (replaces the ones set before).
    verbs: Option<BTreeMap<String, Verb>>,
}

/// Changes what the assistant may offer and how it classifies, at once.
///
/// The tool server is not called: narrowing must work while it is down.
/// An integration that follows a tool-host preset takes its allowlist from
/// the preset (`400`); `trust_annotations` and `verbs` are for MCP servers
/// only (`400`). A change of class reaches actions already waiting for
/// Apply: one whose tool changed verb is refused (`tool_gone`).
#[utoipa::path(
    patch,
    path = "/v1/integrations/{provider}",
    tag = "setup",
    security(("api_key" = [])),
    params(("provider" = String, Path, description = "`generic-rest`, or an MCP server's name")),
    request_body = IntegrationPatch,
    responses((status = 200, description = "The integration as changed", body = ShownIntegration)),
)]
async fn update_integration(
    State(state): State<ApiState>,
    workspace: WorkspaceKey,
    Path(provider): Path<String>,
    ApiJson(patch): ApiJson<IntegrationPatch>,
) -> Result<Json<ShownIntegration>, ApiError> {
    let row = connected(&state, &workspace, &provider).await?;
    let mcp = row.kind == db::KIND_MCP;
    if !mcp && (patch.trust_annotations.is_some() || patch.verbs.is_some()) {
        return Err(ApiError::BadRequest("trust_annotations and verbs are for MCP servers only".into()));
    }
    let fits = if mcp { crate::sources::usable_name } else { crate::host::valid_tool_name };
    let mut changes = serde_json::Map::new();
    if let Some(allowed) = &patch.allowed_tools {
        if let Some(preset) = &row.preset {
            return Err(ApiError::BadRequest(format!(
                "this integration follows the tool preset `{preset}`: its allowlist is the preset's"
            )));
        }
        valid_tool_names("allowed_tools", allowed, fits)?;
        changes.insert("allowed_tools".into(), json!({ "from": row.allowed_tools(), "to": allowed }));
    }
    if let Some(verbs) = &patch.verbs {
        let names: Vec<String> = verbs.keys().cloned().collect();
        valid_tool_names("verbs", &names, fits)?;
        changes.insert("verbs".into(), json!({ "from": row.verbs(), "to": verbs }));
    }
    if let Some(trust) = patch.trust_annotations {
        changes.insert("trust_annotations".into(), json!({ "from": row.trust_annotations != 0, "to": trust }));
    }
    let verbs = patch
        .verbs
        .as_ref()
        .map(|verbs| {
            let words: BTreeMap<&String, &str> = verbs.iter().map(|(tool, verb)| (tool, verb.as_str())).collect();
            serde_json::to_string(&words)
        })
        .transpose()
        .map_err(anyhow::Error::from)?;
    db::update_integration(
        &state.pool,
        &workspace.id,
        &provider,
        db::IntegrationChange {
            allowed_tools: patch.allowed_tools.as_deref(),
            trust_annotations: patch.trust_annotations,
            verbs: verbs.as_deref(),
        },
    )
    .await?;
    let mut detail = json!({ "provider": provider });
    detail.as_object_mut().expect("an object").extend(changes);
    db::audit::record(&state.pool, "api-key", "integration.updated", Some(&workspace.id), None, &detail).await?;
    Ok(Json(ShownIntegration::of(connected(&state, &workspace, &provider).await?, &state.vault)))
}

/// Tool names as their source names them (`fits`), at most 128, no
/// repeats; an error names the request's `field`.
pub(super) fn valid_tool_names(field: &str, names: &[String], fits: fn(&str) -> bool) -> Result<(), ApiError> {
    if names.len() > 128 {
        return Err(ApiError::BadRequest(format!("{field}: at most 128 names")));
    }
    for (i, name) in names.iter().enumerate() {
        if !fits(name) {
            return Err(ApiError::BadRequest(format!("{field}: `{name}` is not a tool name")));
        }
        if names[..i].contains(name) {
            return Err(ApiError::BadRequest(format!("{field}: `{name}` is listed twice")));
        }
    }
    Ok(())
}
