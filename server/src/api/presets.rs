//! Tool-host presets (admin token): named tool servers — a base URL and a
//! secret, sealed at rest — that a Caddie assignment's frozen config picks
//! by name (`"assistant": {"tools": "<name>"}`), so a provisioned space has
//! tools to call. Changing a preset changes every space made from it.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::setup::{Admin, check_tool_host};
use super::state::ApiState;
use crate::db;
use crate::http::{ApiError, ApiJson};

pub fn router() -> OpenApiRouter<ApiState> {
    OpenApiRouter::new().routes(routes!(list_presets)).routes(routes!(set_preset, delete_preset))
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
struct SetPreset {
    /// The tool server's base URL (remote-tools-contract.md).
    #[schema(
        pattern = "^https?://([A-Za-z0-9]+(-[A-Za-z0-9]+)*\\.)*[A-Za-z][A-Za-z0-9]*(-[A-Za-z0-9]+)*(:[0-9]{1,4})?(/[A-Za-z0-9._~-]*)*$"
    )]
    base_url: String,
    /// The bearer the assistant sends it; sealed at rest, never shown again.
    #[schema(min_length = 1, max_length = 4096)]
    secret: String,
    /// The tools the spaces may offer; empty: all of them.
    #[serde(default)]
    allowed_tools: Vec<String>,
}

/// A preset as shown: never its secret.
#[derive(Serialize, utoipa::ToSchema)]
struct ShownPreset {
    name: String,
    base_url: String,
    allowed_tools: Vec<String>,
    /// Spaces whose tool server is this preset.
    spaces: i64,
}

/// A preset's name: 1 to 64 of `a-z 0-9 - _`.
fn valid_name(name: &str) -> Result<(), ApiError> {
    let ok = (1..=64).contains(&name.len())
        && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_');
    if ok { Ok(()) } else { Err(ApiError::BadRequest("a preset's name is 1 to 64 of a-z, 0-9, - and _".into())) }
}

/// The tool-host presets.
#[utoipa::path(
    get,
    path = "/v1/tool-presets",
    tag = "setup",
    security(("admin" = [])),
    responses((status = 200, description = "Every preset, its secret never shown", body = Vec<ShownPreset>)),
)]
async fn list_presets(State(state): State<ApiState>, _admin: Admin) -> Result<Json<Vec<ShownPreset>>, ApiError> {
    let mut shown = Vec::new();
    for preset in db::presets(&state.pool).await? {
        let spaces = db::preset_users(&state.pool, &preset.name).await?;
        shown.push(ShownPreset {
            allowed_tools: preset.allowed_tools(),
            name: preset.name,
            base_url: preset.base_url,
            spaces,
        });
    }
    Ok(Json(shown))
}

/// Sets a tool-host preset, after calling its `GET /tools` once.
///
/// The spaces made from it follow at once. `502 host_check_failed` when
/// the check fails.
#[utoipa::path(
    put,
    path = "/v1/tool-presets/{name}",
    tag = "setup",
    security(("admin" = [])),
    params(("name" = String, Path, pattern = "^[a-z0-9_-]{1,64}$", description = "1 to 64 of a-z, 0-9, - and _")),
    request_body = SetPreset,
    responses((status = 200, description = "The preset as saved (its secret sealed, never shown)", body = ShownPreset)),
)]
async fn set_preset(
    State(state): State<ApiState>,
    _admin: Admin,
    Path(name): Path<String>,
    ApiJson(request): ApiJson<SetPreset>,
) -> Result<Json<ShownPreset>, ApiError> {
    valid_name(&name)?;
    let (target, _) =
        check_tool_host(&state, &request.base_url, &request.secret, &request.allowed_tools, "tool-presets").await?;
    let base_url = target.base_url;
    let sealed = state.vault.seal(&request.secret);
    let spaces = db::upsert_preset(&state.pool, &name, base_url.as_str(), &sealed, &request.allowed_tools).await?;
    tracing::info!(preset = %name, spaces, "tool-host preset set");
    Ok(Json(ShownPreset {
        name,
        base_url: base_url.into(),
        allowed_tools: request.allowed_tools,
        spaces: i64::try_from(spaces).unwrap_or(i64::MAX),
    }))
}

/// Forgets a tool-host preset.
///
/// Spaces made from it keep their tool server; a new assignment can no
/// longer name it.
#[utoipa::path(
    delete,
    path = "/v1/tool-presets/{name}",
    tag = "setup",
    security(("admin" = [])),
    params(("name" = String, Path, description = "The preset's name")),
    responses((status = 204, description = "Forgotten")),
)]
async fn delete_preset(
    State(state): State<ApiState>,
    _admin: Admin,
    Path(name): Path<String>,
) -> Result<StatusCode, ApiError> {
    if !db::delete_preset(&state.pool, &name).await? {
        return Err(ApiError::NotFound);
    }
    Ok(StatusCode::NO_CONTENT)
}
