//! Workspaces and their tool sources, as services the edges share: creating
//! a workspace with fresh secrets (the setup API, Caddie's provisioning) and
//! finding a workspace's connected sources with their secrets opened (the
//! engine, a component's buttons).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use serde::Serialize;

use crate::crypto::{Vault, hash_api_key};
use crate::db::{self, NewWorkspace, Pool, SetupStamp};
use crate::host::HostTarget;
use crate::ids::{new_id, random_bytes};
use crate::llm::Model;
use crate::sources::{McpServer, Source, SourceKind};

/// The Remote Tools host's integration name.
pub const PROVIDER: &str = db::REMOTE_TOOLS_PROVIDER;

/// Creating workspaces and reading their integration and model.
#[derive(Clone)]
pub struct Workspaces {
    pool: Pool,
    vault: Vault,
    /// `CA_ALLOW_PRIVATE_MODEL_HOSTS`: a workspace's model may be on a
    /// private address (a local Ollama or vLLM).
    allow_private_models: bool,
    /// Each workspace's own model as last read (by its `updated_at`), so
    /// what a model learned about its provider lasts across turns.
    models: Arc<Mutex<HashMap<String, (i64, Model)>>>,
    /// Each workspace's sources as a turn last opened them, by the
    /// sources version they were read at or after (see [`Self::turn_sources`]).
    sources: Arc<Mutex<HashMap<String, Opened>>>,
}

/// A workspace's sources as opened, and the sources version they were
/// read at or after.
type Opened = (i64, Arc<[Source]>);

/// A workspace's own model as it is set.
pub struct OwnModel<'a> {
    pub base_url: &'a str,
    pub api_key: &'a str,
    pub model: &'a str,
    pub accepts_images: Option<bool>,
    /// Its embeddings model at the same endpoint (hybrid knowledge search).
    pub embeddings_model: Option<&'a str>,
}

/// A workspace's own embeddings model, its key opened.
pub struct OwnEmbeddings {
    /// When the workspace's model was last set.
    pub updated_at: i64,
    pub base_url: String,
    pub api_key: crate::secret::Secret,
    pub model: String,
    /// `CA_ALLOW_PRIVATE_MODEL_HOSTS`.
    pub allow_private: bool,
}

/// A new workspace and its two secrets, shown once: the api key is stored
/// hashed, the embed secret encrypted.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct CreatedWorkspace {
    pub id: String,
    pub api_key: String,
    pub embed_secret: String,
}

impl Workspaces {
    pub fn new(pool: Pool, vault: Vault, allow_private_models: bool) -> Self {
        Self { pool, vault, allow_private_models, models: Arc::default(), sources: Arc::default() }
    }

    /// A workspace's own model, as it would be used (not yet saved); the
    /// error says why the settings cannot be (never the key).
    pub fn model_from(&self, base_url: &str, api_key: &str, model: &str) -> anyhow::Result<Model> {
        Model::for_workspace(base_url, api_key, model, self.allow_private_models)
    }

    /// Saves a workspace's own model, its key sealed; `accepts_images`
    /// none: decided by the model's name.
    pub async fn set_model(&self, workspace_id: &str, own: OwnModel<'_>) -> anyhow::Result<()> {
        let sealed = self.vault.seal(own.api_key);
        db::set_workspace_model(
            &self.pool,
            workspace_id,
            own.base_url,
            &sealed,
            own.model,
            own.accepts_images,
            own.embeddings_model,
        )
        .await
    }

    /// The workspace's own embeddings model, if it set one: at its own
    /// model's endpoint, with its key.
    pub async fn own_embeddings(&self, workspace_id: &str) -> anyhow::Result<Option<OwnEmbeddings>> {
        let Some(row) = db::workspace_model(&self.pool, workspace_id).await? else {
            return Ok(None);
        };
        let Some(model) = row.embeddings_model else {
            return Ok(None);
        };
        Ok(Some(OwnEmbeddings {
            updated_at: row.updated_at,
            api_key: self.vault.open(&row.api_key_enc)?,
            base_url: row.base_url,
            model,
            allow_private: self.allow_private_models,
        }))
    }

    /// The workspace's own model, if it set one.
    pub async fn model(&self, workspace_id: &str) -> anyhow::Result<Option<Model>> {
        let Some(row) = db::workspace_model(&self.pool, workspace_id).await? else {
            return Ok(None);
        };
        let mut models = self.models.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((at, model)) = models.get(workspace_id)
            && *at == row.updated_at
        {
            return Ok(Some(model.clone()));
        }
        let key = self.vault.open(&row.api_key_enc)?;
        let mut model = self.model_from(&row.base_url, key.expose(), &row.model)?;
        model.accepts_images = row.accepts_images().unwrap_or(model.accepts_images);
        models.insert(workspace_id.to_owned(), (row.updated_at, model.clone()));
        Ok(Some(model))
    }

    /// The workspace's own model for a turn of a caller whose call read
    /// `setup` with the workspace: no query when it has none, or when the
    /// one opened before was set at the same time.
    pub async fn turn_model(&self, workspace_id: &str, setup: Option<SetupStamp>) -> anyhow::Result<Option<Model>> {
        match setup.map(|stamp| stamp.model_updated_at) {
            Some(None) => return Ok(None),
            Some(Some(set_at)) => {
                let models = self.models.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                if let Some((at, model)) = models.get(workspace_id)
                    && *at == set_at
                {
                    return Ok(Some(model.clone()));
                }
            }
            None => {}
        }
        self.model(workspace_id).await
    }

    /// The workspace's tool sources for a turn of a caller whose call read
    /// `setup` with the workspace: those opened for an earlier turn while
    /// its sources version is the same (every change of its integrations
    /// moves it on, in the same transaction), else read and opened now.
    /// What is read after the call's own read is at least as new as its
    /// stamp, so a turn never gets sources older than its call saw.
    pub async fn turn_sources(&self, workspace_id: &str, setup: Option<SetupStamp>) -> anyhow::Result<Arc<[Source]>> {
        let version = setup.map(|stamp| stamp.sources_version);
        if let Some(version) = version {
            let opened = self.sources.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            if let Some((at, sources)) = opened.get(workspace_id)
                && *at == version
            {
                return Ok(sources.clone());
            }
        }
        let sources: Arc<[Source]> = self.sources(workspace_id).await?.into();
        if let Some(version) = version {
            let mut opened = self.sources.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            opened.insert(workspace_id.to_owned(), (version, sources.clone()));
        }
        Ok(sources)
    }

    /// Creates a workspace with fresh secrets.
    pub async fn create(&self, name: &str, origins: &[String]) -> anyhow::Result<CreatedWorkspace> {
        let id = new_id("ws");
        let api_key = new_api_key();
        let embed_secret = new_embed_secret();
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

    /// A new embed secret; the current one verifies tokens on until
    /// `previous_until` (unix ms; not after it, so `now` ends it at once).
    pub async fn rotate_embed_secret(&self, id: &str, previous_until: i64) -> anyhow::Result<RotatedEmbedSecret> {
        let row = db::workspace(&self.pool, id).await?.ok_or_else(|| anyhow::anyhow!("no workspace {id}"))?;
        let previous = self.vault.open(&row.embed_secret_enc)?;
        let embed_secret = new_embed_secret();
        db::rotate_embed_secret(&self.pool, id, &self.vault.seal(&embed_secret), previous_until).await?;
        tracing::info!(workspace_id = %id, "embed secret rotated");
        Ok(RotatedEmbedSecret {
            kid: crate::auth::kid(&embed_secret),
            previous_kid: crate::auth::kid(previous.expose()),
            embed_secret,
        })
    }

    /// A new api key, if `current_hash` is still the current one's (None:
    /// another rotation came first); the current one works on until
    /// `previous_until` (unix ms).
    pub async fn rotate_api_key(
        &self,
        id: &str,
        current_hash: &str,
        previous_until: i64,
    ) -> anyhow::Result<Option<String>> {
        let api_key = new_api_key();
        if !db::rotate_api_key(&self.pool, id, current_hash, &hash_api_key(&api_key), previous_until).await? {
            return Ok(None);
        }
        tracing::info!(workspace_id = %id, "api key rotated");
        Ok(Some(api_key))
    }

    /// The workspace's tool sources (its Remote Tools host, its MCP
    /// servers), their secrets opened, in the order they were connected.
    pub async fn sources(&self, workspace_id: &str) -> anyhow::Result<Vec<Source>> {
        let rows = db::integrations(&self.pool, workspace_id).await?;
        let mut sources = Vec::with_capacity(rows.len());
        for row in rows {
            let secret = self.vault.open(&row.secret_enc)?;
            let url = url::Url::parse(&row.base_url)?;
            let kind = if row.kind == db::KIND_MCP {
                let headers: BTreeMap<String, String> = serde_json::from_str(secret.expose())
                    .map_err(|_| anyhow::anyhow!("the headers of MCP integration {} do not read", row.provider))?;
                SourceKind::Mcp(McpServer {
                    url,
                    headers: headers.into_iter().collect(),
                    trust_annotations: row.trust_annotations != 0,
                    verbs: row.verbs(),
                })
            } else {
                SourceKind::Remote(HostTarget { base_url: url, secret, trusted: row.builtin != 0 })
            };
            sources.push(Source {
                workspace_id: row.workspace_id.clone(),
                allowed_tools: row.allowed_tools(),
                url: row.base_url,
                version: row.version,
                name: row.provider,
                kind,
            });
        }
        Ok(sources)
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

/// A fresh api key: `cak_` and 48 hex digits.
fn new_api_key() -> String {
    format!("cak_{}", hex::encode(random_bytes::<24>()))
}

/// A fresh embed secret: 64 hex digits.
fn new_embed_secret() -> String {
    hex::encode(random_bytes::<32>())
}

/// A rotated embed secret, shown once.
pub struct RotatedEmbedSecret {
    pub embed_secret: String,
    pub kid: String,
    pub previous_kid: String,
}
