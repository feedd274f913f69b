//! A workspace's own model (api key auth): `PUT /v1/workspace/model` sets
//! an OpenAI-compatible endpoint, checked with one small request and its
//! key sealed (never answered again); `GET` shows it, `DELETE` goes back
//! to the server's model.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::setup::{WorkspaceKey, parse_base_url, refuse_private_host};
use super::state::ApiState;
use crate::db;
use crate::http::{ApiError, ApiJson};

pub fn router() -> OpenApiRouter<ApiState> {
    OpenApiRouter::new().routes(routes!(show_model, set_model, delete_model))
}

#[derive(Deserialize, utoipa::ToSchema)]
struct SetModel {
    /// The endpoint's base URL, `…/v1` (see the README's provider table).
    #[schema(
        pattern = "^https?://([A-Za-z0-9]+(-[A-Za-z0-9]+)*\\.)*[A-Za-z][A-Za-z0-9]*(-[A-Za-z0-9]+)*(:[0-9]{1,4})?(/[A-Za-z0-9._~-]*)*$"
    )]
    base_url: String,
    /// The provider's API key; sealed at rest, never shown again.
    #[schema(min_length = 1, max_length = 4096)]
    api_key: String,
    /// The model's name at that provider.
    #[schema(min_length = 1, max_length = 200)]
    model: String,
    /// Whether the model is given the visitor's images as image parts
    /// (else a line of the message names each). Absent or null: yes for
    /// the known vision models (GPT-4o, GPT-4.1, GPT-5, Claude 3+, Gemini,
    /// Pixtral, Llama 4, Qwen-VL, …), no for others.
    #[serde(default)]
    accepts_images: Option<bool>,
    /// An embeddings model at the same endpoint, with the same key: the
    /// workspace's knowledge is then searched by meaning too (hybrid
    /// search; its sources sync again to give their passages vectors).
    /// Absent or null: the server's embeddings model, if any. On an Azure
    /// deployment's URL, the name of the embeddings deployment.
    #[serde(default)]
    #[schema(min_length = 1, max_length = 200)]
    embeddings_model: Option<String>,
}

/// A workspace's model as shown: never its key.
#[derive(Serialize, utoipa::ToSchema)]
struct ShownModel {
    base_url: String,
    model: String,
    /// Whether it is given images (as set, else by its name).
    accepts_images: bool,
    /// Its embeddings model, if one is set.
    embeddings_model: Option<String>,
}

/// The workspace's own model.
///
/// `404` when it uses the server's model.
#[utoipa::path(
    get,
    path = "/v1/workspace/model",
    tag = "setup",
    security(("api_key" = [])),
    responses((status = 200, description = "The workspace's model (its api key never shown)", body = ShownModel)),
)]
async fn show_model(State(state): State<ApiState>, workspace: WorkspaceKey) -> Result<Json<ShownModel>, ApiError> {
    let row = db::workspace_model(&state.pool, &workspace.id).await?.ok_or(ApiError::NotFound)?;
    let accepts_images = row.accepts_images().unwrap_or_else(|| crate::llm::known_vision(&row.model));
    Ok(Json(ShownModel {
        base_url: row.base_url,
        model: row.model,
        accepts_images,
        embeddings_model: row.embeddings_model,
    }))
}

/// Sets the workspace's own model, after one small request to it (and one
/// to its embeddings model, when one is named).
///
/// `400` for an unusable URL (or a private address, unless the operator
/// allows them with `CA_ALLOW_PRIVATE_MODEL_HOSTS`); `502 model_check_failed`
/// when the endpoint does not answer the check, with what it said.
#[utoipa::path(
    put,
    path = "/v1/workspace/model",
    tag = "setup",
    security(("api_key" = [])),
    request_body = SetModel,
    responses((status = 200, description = "The model as set (its api key never shown)", body = ShownModel)),
)]
async fn set_model(
    State(state): State<ApiState>,
    workspace: WorkspaceKey,
    ApiJson(request): ApiJson<SetModel>,
) -> Result<Json<ShownModel>, ApiError> {
    let base_url = parse_base_url(&request.base_url)?;
    let (api_key, name) = (request.api_key.trim(), request.model.trim());
    if api_key.is_empty() || name.is_empty() {
        return Err(ApiError::BadRequest("api_key and model must not be empty".into()));
    }
    let embeddings_model = match request.embeddings_model.as_deref().map(str::trim) {
        None => None,
        Some("") => return Err(ApiError::BadRequest("embeddings_model must not be empty (leave it out)".into())),
        Some(e) if e.chars().count() > 200 => {
            return Err(ApiError::BadRequest("embeddings_model: at most 200 characters".into()));
        }
        Some(e) => Some(e),
    };
    if !state.allow_private_model_hosts {
        refuse_private_host(&base_url, "CA_ALLOW_PRIVATE_MODEL_HOSTS").await?;
    }
    let base = base_url.as_str().trim_end_matches('/').to_owned();
    let model = state
        .workspaces
        .model_from(&base, api_key, name)
        .map_err(|error| ApiError::BadRequest(format!("base_url: {error}")))?;
    model.check().await.map_err(|error| {
        tracing::info!(workspace_id = %workspace.id, %error, "workspace model check failed");
        let said = match &error {
            crate::llm::ModelError::Rejected { status, .. } => format!("it answered {status}"),
            other => other.to_string(),
        };
        ApiError::BadGateway("model_check_failed", format!("the model did not answer the check: {said}"))
    })?;
    if let Some(embeddings) = embeddings_model {
        let embedder = crate::knowledge::embed::Embedder::for_workspace(
            &base,
            api_key,
            embeddings,
            state.allow_private_model_hosts,
        )
        .map_err(|error| ApiError::BadRequest(format!("base_url: {error}")))?;
        embedder.check().await.map_err(|said| {
            tracing::info!(workspace_id = %workspace.id, said, "workspace embeddings check failed");
            ApiError::BadGateway("model_check_failed", format!("the embeddings model did not answer the check: {said}"))
        })?;
    }
    let previous = db::workspace_model(&state.pool, &workspace.id).await?.and_then(|row| row.embeddings_model);
    let own = crate::workspaces::OwnModel {
        base_url: &base,
        api_key,
        model: name,
        accepts_images: request.accepts_images,
        embeddings_model,
    };
    state.workspaces.set_model(&workspace.id, own).await?;
    tracing::info!(workspace_id = %workspace.id, model = name, embeddings_model, "workspace model set");
    if embeddings_model.is_some() && previous.as_deref() != embeddings_model {
        // The passages get the new model's vectors at their sources' next
        // sync: now (an unchanged page costs a conditional request).
        db::knowledge::request_sync_all(&state.pool, &workspace.id).await?;
        state.engine.knowledge.wake();
    }
    let accepts_images = request.accepts_images.unwrap_or_else(|| crate::llm::known_vision(name));
    let detail = serde_json::json!({ "base_url": base.as_str(), "model": name, "accepts_images": accepts_images,
                                     "embeddings_model": embeddings_model });
    db::audit::record(&state.pool, "api-key", "model.set", Some(&workspace.id), None, &detail).await?;
    Ok(Json(ShownModel {
        base_url: base,
        model: name.to_owned(),
        accepts_images,
        embeddings_model: embeddings_model.map(str::to_owned),
    }))
}

/// Goes back to the server's model.
#[utoipa::path(
    delete,
    path = "/v1/workspace/model",
    tag = "setup",
    security(("api_key" = [])),
    responses((status = 204, description = "The server's model answers again")),
)]
async fn delete_model(State(state): State<ApiState>, workspace: WorkspaceKey) -> Result<StatusCode, ApiError> {
    if !db::delete_workspace_model(&state.pool, &workspace.id).await? {
        return Err(ApiError::NotFound);
    }
    db::audit::record(&state.pool, "api-key", "model.removed", Some(&workspace.id), None, &serde_json::json!({}))
        .await?;
    Ok(StatusCode::NO_CONTENT)
}
