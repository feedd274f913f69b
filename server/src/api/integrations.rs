//! A workspace's tool server, as its host sees it (api key auth): list,
//! show (never the secret) and change the allowlist of the integration
//! `POST /v1/integrations/{provider}/connect` made. Connecting and
//! disconnecting are in `setup.rs`; every change is in the audit trail.

use axum::Json;
use axum::extract::{Path, State};
use serde::{Deserialize, Serialize};
use serde_json::json;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::setup::WorkspaceKey;
use super::state::ApiState;
use crate::db;
use crate::http::{ApiError, ApiJson};
use crate::ids::rfc3339;
use crate::workspaces::PROVIDER;

pub fn router() -> OpenApiRouter<ApiState> {
    OpenApiRouter::new().routes(routes!(list_integrations)).routes(routes!(show_integration, update_integration))
}

/// A connected tool server: never its secret.
#[derive(Serialize, utoipa::ToSchema)]
pub(super) struct ShownIntegration {
    provider: String,
    base_url: String,
    /// The tools the assistant may offer; empty: all of them.
    allowed_tools: Vec<String>,
    /// The operator's tool-host preset it follows (a Caddie space's), if any.
    preset: Option<String>,
    /// When it was connected (RFC 3339).
    connected_at: String,
}

impl From<db::IntegrationRow> for ShownIntegration {
    fn from(row: db::IntegrationRow) -> Self {
        Self {
            allowed_tools: row.allowed_tools(),
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

/// The workspace's integrations (none, or its one tool server).
#[utoipa::path(
    get,
    path = "/v1/integrations",
    tag = "setup",
    security(("api_key" = [])),
    responses((status = 200, description = "The workspace's integrations", body = IntegrationList)),
)]
async fn list_integrations(
    State(state): State<ApiState>,
    workspace: WorkspaceKey,
) -> Result<Json<IntegrationList>, ApiError> {
    let integrations = db::integration(&state.pool, &workspace.id).await?.into_iter().map(Into::into).collect();
    Ok(Json(IntegrationList { integrations }))
}

/// One integration, without its secret.
#[utoipa::path(
    get,
    path = "/v1/integrations/{provider}",
    tag = "setup",
    security(("api_key" = [])),
    params(("provider" = String, Path, description = "`generic-rest`, the one provider")),
    responses((status = 200, description = "The integration: its tools and allowlist (never its secret)", body = ShownIntegration)),
)]
async fn show_integration(
    State(state): State<ApiState>,
    workspace: WorkspaceKey,
    Path(provider): Path<String>,
) -> Result<Json<ShownIntegration>, ApiError> {
    Ok(Json(connected(&state, &workspace, &provider).await?.into()))
}

async fn connected(state: &ApiState, workspace: &WorkspaceKey, provider: &str) -> Result<db::IntegrationRow, ApiError> {
    match db::integration(&state.pool, &workspace.id).await? {
        Some(row) if provider == PROVIDER && row.provider == provider => Ok(row),
        _ => Err(ApiError::NotFound),
    }
}

/// What to change of an integration.
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
struct IntegrationPatch {
    /// The tools the assistant may offer (empty: all of them): names of
    /// 1 to 64 letters, digits, `_` and `-`, at most 128, no repeats.
    #[schema(max_items = 128)]
    allowed_tools: Vec<String>,
}

/// Replaces the tools the assistant may offer, at once.
///
/// The tool server is not called: narrowing the allowlist must work while
/// it is down. An integration that follows a tool-host preset takes its
/// allowlist from the preset (`400`).
#[utoipa::path(
    patch,
    path = "/v1/integrations/{provider}",
    tag = "setup",
    security(("api_key" = [])),
    params(("provider" = String, Path, description = "`generic-rest`, the one provider")),
    request_body = IntegrationPatch,
    responses((status = 200, description = "The integration as narrowed", body = ShownIntegration)),
)]
async fn update_integration(
    State(state): State<ApiState>,
    workspace: WorkspaceKey,
    Path(provider): Path<String>,
    ApiJson(patch): ApiJson<IntegrationPatch>,
) -> Result<Json<ShownIntegration>, ApiError> {
    let mut row = connected(&state, &workspace, &provider).await?;
    if let Some(preset) = &row.preset {
        return Err(ApiError::BadRequest(format!(
            "this integration follows the tool preset `{preset}`: its allowlist is the preset's"
        )));
    }
    valid_tool_names(&patch.allowed_tools)?;
    let before = row.allowed_tools();
    db::set_allowed_tools(&state.pool, &workspace.id, &provider, &patch.allowed_tools).await?;
    let detail = json!({ "provider": provider, "allowed_tools": { "from": before, "to": patch.allowed_tools } });
    db::audit::record(&state.pool, "api-key", "integration.updated", Some(&workspace.id), None, &detail).await?;
    row.allowed_tools = serde_json::to_string(&patch.allowed_tools).map_err(anyhow::Error::from)?;
    Ok(Json(row.into()))
}

/// Tool names as models accept them: 1 to 64 of `A-Z a-z 0-9 _ -`, no repeats.
fn valid_tool_names(names: &[String]) -> Result<(), ApiError> {
    if names.len() > 128 {
        return Err(ApiError::BadRequest("allowed_tools: at most 128 names".into()));
    }
    for (i, name) in names.iter().enumerate() {
        let ok =
            (1..=64).contains(&name.len()) && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
        if !ok {
            return Err(ApiError::BadRequest(format!("allowed_tools: `{name}` is not a tool name")));
        }
        if names[..i].contains(name) {
            return Err(ApiError::BadRequest(format!("allowed_tools: `{name}` is listed twice")));
        }
    }
    Ok(())
}
