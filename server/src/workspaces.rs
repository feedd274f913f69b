//! Workspaces and their tool host, as services the edges share: creating a
//! workspace with fresh secrets (the setup API, Caddie's provisioning) and
//! finding a workspace's connected host with its secret opened (the
//! engine, a component's buttons).

use serde::Serialize;

use crate::crypto::{Vault, hash_api_key};
use crate::db::{self, NewWorkspace, Pool};
use crate::host::HostTarget;
use crate::ids::{new_id, random_bytes};

/// The one integration provider: a Remote Tools host over HTTP.
pub const PROVIDER: &str = "generic-rest";

/// Creating workspaces and reading their integration.
#[derive(Clone)]
pub struct Workspaces {
    pool: Pool,
    vault: Vault,
}

/// A new workspace and its two secrets, shown once: the api key is stored
/// hashed, the embed secret encrypted.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct CreatedWorkspace {
    pub id: String,
    pub api_key: String,
    pub embed_secret: String,
}

/// A workspace's connected tool host and the tools it may offer (empty:
/// all of them).
#[derive(Debug)]
pub struct ConnectedHost {
    pub target: HostTarget,
    pub allowed_tools: Vec<String>,
}

impl Workspaces {
    pub fn new(pool: Pool, vault: Vault) -> Self {
        Self { pool, vault }
    }

    /// Creates a workspace with fresh secrets.
    pub async fn create(&self, name: &str, origins: &[String]) -> anyhow::Result<CreatedWorkspace> {
        let id = new_id("ws");
        let api_key = format!("cak_{}", hex::encode(random_bytes::<24>()));
        let embed_secret = hex::encode(random_bytes::<32>());
        db::insert_workspace(
            &self.pool,
            NewWorkspace {
                id: &id,
                name,
                allowed_origins: origins,
                api_key_hash: &hash_api_key(&api_key),
                embed_secret_enc: &self.vault.seal(&embed_secret),
            },
        )
        .await?;
        tracing::info!(workspace_id = %id, "workspace created");
        Ok(CreatedWorkspace { id, api_key, embed_secret })
    }

    /// The workspace's tool host, with its secret opened, if one is connected.
    pub async fn host(&self, workspace_id: &str) -> anyhow::Result<Option<ConnectedHost>> {
        let Some(row) = db::integration(&self.pool, workspace_id).await? else {
            return Ok(None);
        };
        let secret = self.vault.open(&row.secret_enc)?;
        let base_url = url::Url::parse(&row.base_url)?;
        let allowed_tools = row.allowed_tools();
        Ok(Some(ConnectedHost { target: HostTarget { base_url, secret, trusted: row.builtin != 0 }, allowed_tools }))
    }

    /// Seals anew, under the current key, every stored secret the previous
    /// key sealed (`CA_SECRET_KEY_PREVIOUS`); returns how many. Safe on
    /// several replicas at once: each value is replaced only if unchanged.
    pub async fn reseal_all(&self) -> anyhow::Result<usize> {
        let mut resealed = 0;
        for secret in db::sealed_secrets(&self.pool).await? {
            match self.vault.reseal(&secret.sealed) {
                Ok(Some(new)) => resealed += usize::from(db::replace_sealed(&self.pool, &secret, &new).await?),
                Ok(None) => {}
                Err(error) => tracing::error!(
                    workspace_id = %secret.workspace_id,
                    kind = ?secret.kind,
                    %error,
                    "a stored secret opens with neither CA_SECRET_KEY nor CA_SECRET_KEY_PREVIOUS"
                ),
            }
        }
        Ok(resealed)
    }
}
