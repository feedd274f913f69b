//! What the API's handlers share, and who calls the chat API.

use std::sync::Arc;

use axum::extract::{FromRef, FromRequestParts};
use axum::http::header;
use axum::http::request::Parts;

use crate::auth::{self, Caller};
use crate::clock::Clock;
use crate::crypto::Vault;
use crate::db::{self, Pool};
use crate::engine::Engine;
use crate::engine::stop::TurnRegistry;
use crate::host::HostClient;
use crate::http::{ApiError, bearer};
use crate::limits::Limits;
use crate::secret::Secret;
use crate::workspaces::Workspaces;

/// What the API's handlers share.
#[derive(Clone, FromRef)]
pub struct ApiState {
    pub pool: Pool,
    pub vault: Vault,
    pub workspaces: Workspaces,
    pub engine: Engine,
    pub turns: TurnRegistry,
    pub host: HostClient,
    /// `CA_ADMIN_TOKEN`: the bearer of workspace creation; none disables it.
    pub admin_token: Option<Secret>,
    /// `CA_ALLOW_PRIVATE_TOOL_HOSTS`.
    pub allow_private_tool_hosts: bool,
    /// `CA_ALLOW_PRIVATE_MODEL_HOSTS`.
    #[from_ref(skip)]
    pub allow_private_model_hosts: bool,
    /// The assistant's own origin, e.g. `http://127.0.0.1:3000`.
    pub public_origin: Arc<str>,
    /// What pending actions expire by.
    pub clock: Clock,
    /// Turns and component calls per user, address and workspace.
    pub limits: Limits,
    /// Turns admitted in this process (`CA_MAX_CONCURRENT_TURNS`).
    #[from_ref(skip)]
    pub turn_slots: crate::limits::TurnSlots,
    /// Streams open in this process (`CA_MAX_OPEN_STREAMS`).
    #[from_ref(skip)]
    pub streams: crate::limits::OpenStreams,
    /// Where attachments are kept, and how large they may be.
    #[from_ref(skip)]
    pub attachments: crate::attachments::Attachments,
}

/// The chat API's caller, from the embed token (assistant-api.md §2), and
/// the page it calls from: a browser's `Origin` must be the assistant's own
/// (the widget's frame) or one of the workspace's `allowed_origins`.
impl FromRequestParts<ApiState> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &ApiState) -> Result<Self, Self::Rejection> {
        let token = bearer(parts).ok_or(ApiError::Unauthorized)?;
        let workspace_id = auth::unverified_workspace(token).map_err(|_| ApiError::Unauthorized)?;
        let Some(workspace) = db::workspace(&state.pool, &workspace_id).await? else {
            return Err(ApiError::Unauthorized);
        };
        let secret = state.vault.open(&workspace.embed_secret_enc)?;
        let previous = match workspace.previous_embed_secret(crate::ids::now_ms()) {
            Some(sealed) => Some(state.vault.open(sealed)?),
            None => None,
        };
        let secrets: Vec<&str> = std::iter::once(&secret).chain(previous.as_ref()).map(|s| s.expose()).collect();
        let claims = auth::verify_with_any(token, &workspace.id, &secrets).map_err(|error| {
            tracing::info!(workspace_id = %workspace.id, %error, "embed token refused");
            ApiError::Unauthorized
        })?;
        if let Some(origin) = parts.headers.get(header::ORIGIN) {
            let origin = origin.to_str().unwrap_or("");
            let own: &str = &state.public_origin;
            if origin != own && !workspace.allowed_origins().iter().any(|o| o == origin) {
                tracing::info!(workspace_id = %workspace.id, origin, "chat call from an origin outside allowed_origins");
                return Err(ApiError::Forbidden(
                    "origin_not_allowed",
                    "this page's origin is not allowed for the workspace".into(),
                ));
            }
        }
        // A Caddie space: the user's grant as it stands now, on every call,
        // so a revocation bites at once, whatever token they still hold.
        if workspace.caddie_linked > 0 && !db::caddie::has_grant(&state.pool, &workspace.id, &claims.sub).await? {
            tracing::info!(workspace_id = %workspace.id, "chat call without a grant in a Caddie space");
            return Err(ApiError::Forbidden("no_access", "You no longer have access to this space.".into()));
        }
        Ok(Caller {
            workspace_id: claims.ws,
            external_user_id: claims.sub,
            permissions: claims.permissions,
            limits: workspace.limits(),
            attachment_types: workspace.attachment_types(),
            setup: Some(workspace.setup_stamp()),
            knowledge: Some(workspace.turn_knowledge()),
        })
    }
}
