//! Rotating a workspace's secrets with overlap (api key auth):
//! `POST /v1/workspace/embed-secret/rotate` and
//! `POST /v1/workspace/api-key/rotate` answer the new secret once; the
//! previous one keeps working until `previous_valid_until`
//! (`grace_seconds`, default an hour, zero ends it at once), so a host can
//! roll the new one out without downtime. Rotating again ends an older
//! previous one at once. Each rotation is in the audit trail (never a secret).

use axum::Json;
use axum::extract::State;
use serde::{Deserialize, Serialize};
use serde_json::json;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::setup::WorkspaceKey;
use super::state::ApiState;
use crate::db;
use crate::http::{ApiError, ApiJson};
use crate::ids::{now_ms, rfc3339};

pub fn router() -> OpenApiRouter<ApiState> {
    OpenApiRouter::new().routes(routes!(rotate_embed_secret)).routes(routes!(rotate_api_key))
}

/// The longest grace: a week.
const MAX_GRACE_SECONDS: u64 = 7 * 24 * 3600;
const DEFAULT_GRACE_SECONDS: u64 = 3600;

/// How long the previous secret keeps working (`{}` for the default hour).
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
struct RotateRequest {
    /// Seconds, 0 to 604800 (a week); 0 refuses the previous one at once.
    #[serde(default, deserialize_with = "crate::http::optional_whole")]
    #[schema(minimum = 0, maximum = 604_800, default = 3600)]
    grace_seconds: Option<u64>,
}

impl RotateRequest {
    /// When the previous secret stops working, unix ms.
    fn previous_until(&self) -> Result<i64, ApiError> {
        let grace = self.grace_seconds.unwrap_or(DEFAULT_GRACE_SECONDS);
        if grace > MAX_GRACE_SECONDS {
            return Err(ApiError::BadRequest(format!("grace_seconds must be 0 to {MAX_GRACE_SECONDS}")));
        }
        Ok(now_ms() + grace as i64 * 1000)
    }
}

/// The new embed secret, shown once.
#[derive(Serialize, utoipa::ToSchema)]
struct RotatedEmbedSecret {
    /// Mint embed tokens with this from now on.
    embed_secret: String,
    /// Its key id: put it in the tokens' JWT header (`kid`) so they are
    /// verified with it at once; a token without `kid` is tried against
    /// both secrets during the grace.
    kid: String,
    previous_kid: String,
    /// Until then (RFC 3339) tokens signed with the previous secret still verify.
    previous_valid_until: String,
}

/// The new api key, shown once.
#[derive(Serialize, utoipa::ToSchema)]
struct RotatedApiKey {
    api_key: String,
    /// Until then (RFC 3339) the previous key still works — except to rotate.
    previous_valid_until: String,
}

/// Rotates the embed secret; the previous one verifies tokens until `previous_valid_until`.
#[utoipa::path(
    post,
    path = "/v1/workspace/embed-secret/rotate",
    tag = "setup",
    security(("api_key" = [])),
    request_body = RotateRequest,
    responses((status = 200, description = "The new embed secret, shown once; the previous one works until the overlap ends", body = RotatedEmbedSecret)),
)]
async fn rotate_embed_secret(
    State(state): State<ApiState>,
    workspace: WorkspaceKey,
    ApiJson(request): ApiJson<RotateRequest>,
) -> Result<Json<RotatedEmbedSecret>, ApiError> {
    current_key_only(&workspace)?;
    let until = request.previous_until()?;
    let rotated = state.workspaces.rotate_embed_secret(&workspace.id, until).await?;
    let detail =
        json!({ "kid": rotated.kid, "previous_kid": rotated.previous_kid, "previous_valid_until": rfc3339(until) });
    db::audit::record(&state.pool, "api-key", "embed_secret.rotated", Some(&workspace.id), None, &detail).await?;
    Ok(Json(RotatedEmbedSecret {
        embed_secret: rotated.embed_secret,
        kid: rotated.kid,
        previous_kid: rotated.previous_kid,
        previous_valid_until: rfc3339(until),
    }))
}

/// Rotates the api key; the previous one works until `previous_valid_until`, but cannot rotate.
#[utoipa::path(
    post,
    path = "/v1/workspace/api-key/rotate",
    tag = "setup",
    security(("api_key" = [])),
    request_body = RotateRequest,
    responses((status = 200, description = "The new api key, shown once; the previous one works until the overlap ends (except to rotate)", body = RotatedApiKey)),
)]
async fn rotate_api_key(
    State(state): State<ApiState>,
    workspace: WorkspaceKey,
    ApiJson(request): ApiJson<RotateRequest>,
) -> Result<Json<RotatedApiKey>, ApiError> {
    current_key_only(&workspace)?;
    let until = request.previous_until()?;
    let Some(api_key) = state.workspaces.rotate_api_key(&workspace.id, &workspace.key_hash, until).await? else {
        // Another rotation came first: this key is the previous one now.
        return Err(previous_key());
    };
    let detail = json!({ "previous_valid_until": rfc3339(until) });
    db::audit::record(&state.pool, "api-key", "api_key.rotated", Some(&workspace.id), None, &detail).await?;
    Ok(Json(RotatedApiKey { api_key, previous_valid_until: rfc3339(until) }))
}

/// A key past its rotation may still read and configure during the grace,
/// but not rotate: whoever holds a leaked previous key must not lock the
/// host out by rotating again.
fn current_key_only(workspace: &WorkspaceKey) -> Result<(), ApiError> {
    if workspace.current { Ok(()) } else { Err(previous_key()) }
}

fn previous_key() -> ApiError {
    ApiError::Forbidden("previous_api_key", "rotate with the current api key; this one was rotated".into())
}
