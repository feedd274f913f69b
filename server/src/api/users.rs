//! Erasing an end user (api key auth): `DELETE /v1/users/{external_user_id}`
//! deletes everything stored for them in the workspace and records the
//! erasure — without the erased content — in the audit trail.

use axum::Json;
use axum::extract::{Path, State};
use serde::Serialize;
use serde_json::json;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::setup::WorkspaceKey;
use super::state::ApiState;
use crate::db;
use crate::db::erasure::{self, EraseError, Erased};
use crate::http::ApiError;

pub fn router() -> OpenApiRouter<ApiState> {
    OpenApiRouter::new().routes(routes!(erase_user))
}

#[derive(Serialize, utoipa::ToSchema)]
struct Erasure {
    external_user_id: String,
    /// How many of each were deleted (all zero for a user with nothing stored).
    deleted: Erased,
}

/// Erases everything stored for an end user in the workspace.
///
/// Their conversations with every message, turn, stream event, component
/// and pending action; their attachments, rows and bytes; their limits' counters; the content of the audit
/// entries about them (kept with their kind and time only). `409
/// turn_in_progress` while one of their turns runs. What the tool host
/// keeps is the host's to erase.
#[utoipa::path(
    delete,
    path = "/v1/users/{external_user_id}",
    tag = "setup",
    security(("api_key" = [])),
    params(("external_user_id" = String, Path, description = "The `sub` of the user's embed tokens")),
    responses((status = 200, description = "What was erased, by kind", body = Erasure)),
)]
async fn erase_user(
    State(state): State<ApiState>,
    workspace: WorkspaceKey,
    Path(user): Path<String>,
) -> Result<Json<Erasure>, ApiError> {
    if user.is_empty() || user.len() > 256 {
        return Err(ApiError::BadRequest("external_user_id must be 1 to 256 characters".into()));
    }
    let (deleted, objects) = match erasure::erase_user(&state.pool, &workspace.id, &user).await {
        Ok(erased) => erased,
        Err(EraseError::TurnRunning) => return Err(ApiError::TurnInProgress),
        Err(EraseError::Db(error)) => return Err(error.into()),
    };
    // The attachments' bytes, once no row names them.
    for key in &objects {
        state.attachments.remove(key).await?;
    }
    tracing::info!(workspace_id = %workspace.id, conversations = deleted.conversations, "user erased");
    let detail = json!({ "deleted": deleted });
    db::audit::record(&state.pool, "api-key", "user.erased", Some(&workspace.id), Some(&user), &detail).await?;
    Ok(Json(Erasure { external_user_id: user, deleted }))
}
