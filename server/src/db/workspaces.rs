//! Workspaces and their integrations (the Remote Tools host, MCP servers).

use sqlx::FromRow;

use super::pool::Pool;
use crate::ids::now_ms;

#[derive(Debug, Clone, FromRow)]
pub struct WorkspaceRow {
    pub id: String,
    pub name: String,
    pub allowed_origins: String,
    pub embed_secret_enc: String,
    /// Its own limits, as JSON (`config::WorkspaceLimits`).
    pub limits: String,
    /// 1 when it is a Caddie space (linked to an assignment): only users
    /// with a grant may use it.
    pub caddie_linked: i64,
    /// The embed secret before the last rotation, sealed, and until when
    /// (unix ms) it still verifies tokens.
    pub embed_secret_prev_enc: Option<String>,
    pub embed_secret_prev_until: Option<i64>,
    /// Until when (unix ms) the api key before the last rotation still works.
    pub api_key_prev_until: Option<i64>,
    /// Its default widget look, as JSON (`widget::wire::Theme`).
    pub theme: String,
    /// Days its conversations are kept after their last message; None keeps them.
    pub retention_days: Option<i64>,
    /// Its start screen per language, as JSON (`widget::wire::Welcome`).
    pub welcome: String,
    /// The browser features its MCP Apps may have, as JSON (a list of
    /// Permissions Policy features).
    pub app_permissions: String,
    /// The media types of attachment it takes, as JSON; None: every one
    /// the server takes.
    pub attachment_types: Option<String>,
    /// 1: questions about the host are answered only from its knowledge
    /// sources and tools (issue #45).
    pub knowledge_only: i64,
    /// One higher at every change of its integrations.
    pub sources_version: i64,
    /// When its own model was last set; none: it has none.
    pub model_updated_at: Option<i64>,
    /// 1 when it has any knowledge to search.
    pub has_knowledge: i64,
}

/// What a turn's setup of a workspace depends on, read with the workspace
/// on every call: while it is the same, the sources and model opened for
/// an earlier turn are still the workspace's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SetupStamp {
    pub sources_version: i64,
    pub model_updated_at: Option<i64>,
}

/// What a turn needs to know of the workspace's knowledge: whether
/// answers about the host come only from its sources and tools, and
/// whether it has anything to search.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TurnKnowledge {
    pub only: bool,
    pub any: bool,
}

impl WorkspaceRow {
    pub fn setup_stamp(&self) -> SetupStamp {
        SetupStamp { sources_version: self.sources_version, model_updated_at: self.model_updated_at }
    }

    /// Its knowledge settings, as a turn needs them.
    pub fn turn_knowledge(&self) -> TurnKnowledge {
        TurnKnowledge { only: self.knowledge_only != 0, any: self.has_knowledge > 0 }
    }

    pub fn allowed_origins(&self) -> Vec<String> {
        serde_json::from_str(&self.allowed_origins).unwrap_or_default()
    }

    /// The browser features its MCP Apps may have (written by
    /// `set_workspace_settings` only, after the API checked each).
    pub fn app_permissions(&self) -> Vec<String> {
        serde_json::from_str(&self.app_permissions).unwrap_or_default()
    }

    /// The media types of attachment it takes; None: every one the server
    /// takes (written by `set_workspace_settings` only, after the API checked each).
    pub fn attachment_types(&self) -> Option<Vec<String>> {
        self.attachment_types.as_deref().and_then(|t| serde_json::from_str(t).ok())
    }

    /// Its own limits; none that could not be read (they are written by
    /// `set_workspace_settings` only).
    pub fn limits(&self) -> crate::config::WorkspaceLimits {
        serde_json::from_str(&self.limits).unwrap_or_default()
    }

    /// Its default widget look; only valid values (they were checked when set).
    /// Its start screen per language; none that is out of shape (it is
    /// written by `set_workspace_settings` only, after the same check).
    pub fn welcome(&self) -> widget::wire::Welcome {
        serde_json::from_str(&self.welcome)
            .ok()
            .filter(|w: &widget::wire::Welcome| w.refusal().is_none())
            .unwrap_or_default()
    }

    pub fn theme(&self) -> widget::wire::Theme {
        let t: widget::wire::Theme = serde_json::from_str(&self.theme).unwrap_or_default();
        let radius = t.radius.map(|r| r.to_string());
        widget::wire::Theme::parse(t.mode.as_deref(), t.accent.as_deref(), radius.as_deref(), t.font.as_deref())
    }

    /// The previous embed secret while it still verifies tokens at `now` (ms).
    pub fn previous_embed_secret(&self, now: i64) -> Option<&str> {
        self.embed_secret_prev_enc.as_deref().filter(|_| self.embed_secret_prev_until.is_some_and(|until| until > now))
    }
}

#[derive(Debug, Clone, FromRow)]
pub struct IntegrationRow {
    pub workspace_id: String,
    /// Its name: `generic-rest` for the Remote Tools host, the host's own
    /// name for an MCP server.
    pub provider: String,
    /// [`KIND_REMOTE_TOOLS`] or [`KIND_MCP`].
    pub kind: String,
    /// The Remote Tools base URL, or the MCP server's endpoint.
    pub base_url: String,
    /// Sealed: the Remote Tools bearer, or an MCP server's headers (a JSON object).
    pub secret_enc: String,
    pub allowed_tools: String,
    pub builtin: i64,
    /// The tool-host preset it follows, if it was made from one.
    pub preset: Option<String>,
    pub created_at: i64,
    /// Its workspace's count of connects when it was connected: a pending
    /// action or an app made on it holds it (migration 0037).
    pub version: i64,
    /// MCP: the server's annotations decide which tools run by themselves.
    pub trust_annotations: i64,
    /// MCP: the host's own verb per tool, as a JSON object.
    pub verbs: String,
}

/// The name of the Remote Tools host's integration.
pub const REMOTE_TOOLS_PROVIDER: &str = "generic-rest";

/// The kind of a Remote Tools host (remote-tools-contract.md).
pub const KIND_REMOTE_TOOLS: &str = "remote-tools";
/// The kind of an MCP server.
pub const KIND_MCP: &str = "mcp";

const INTEGRATION_COLUMNS: &str = "workspace_id, provider, kind, base_url, secret_enc, allowed_tools, builtin, preset, created_at, version, trust_annotations, verbs";

impl IntegrationRow {
    pub fn allowed_tools(&self) -> Vec<String> {
        serde_json::from_str(&self.allowed_tools).unwrap_or_default()
    }

    /// The host's verbs by tool name (written only after they were checked).
    pub fn verbs(&self) -> std::collections::BTreeMap<String, widget::wire::Verb> {
        let raw: std::collections::BTreeMap<String, String> = serde_json::from_str(&self.verbs).unwrap_or_default();
        raw.into_iter().filter_map(|(tool, verb)| Some((tool, widget::wire::Verb::parse(&verb)?))).collect()
    }
}

/// A new workspace as it is written.
pub struct NewWorkspace<'a> {
    pub id: &'a str,
    pub name: &'a str,
    pub allowed_origins: &'a [String],
    pub api_key_hash: &'a str,
    pub embed_secret_enc: &'a str,
}

pub async fn insert_workspace(pool: &Pool, w: NewWorkspace<'_>) -> anyhow::Result<()> {
    sqlx::query(
        "INSERT INTO workspaces (id, name, allowed_origins, api_key_hash, embed_secret_enc, created_at)
         VALUES ($1, $2, $3, $4, $5, $6)",
    )
    .bind(w.id)
    .bind(w.name)
    .bind(serde_json::to_string(w.allowed_origins)?)
    .bind(w.api_key_hash)
    .bind(w.embed_secret_enc)
    .bind(now_ms())
    .execute(pool)
    .await?;
    Ok(())
}

/// A workspace's settings as its host sets them.
pub struct WorkspaceSettings<'a> {
    pub name: &'a str,
    pub origins: &'a [String],
    pub limits: &'a crate::config::WorkspaceLimits,
    pub theme: &'a widget::wire::Theme,
    pub retention_days: Option<i64>,
    pub welcome: &'a widget::wire::Welcome,
    pub app_permissions: &'a [String],
    pub attachment_types: Option<&'a [String]>,
    pub knowledge_only: bool,
}

/// Writes a workspace's name, allowed origins, own limits, theme, retention,
/// start screen, its apps' browser features and the attachments it takes.
pub async fn set_workspace_settings(pool: &Pool, id: &str, s: WorkspaceSettings<'_>) -> anyhow::Result<()> {
    sqlx::query(
        "UPDATE workspaces SET name = $1, allowed_origins = $2, limits = $3, theme = $4, retention_days = $5,
         welcome = $6, app_permissions = $7, attachment_types = $8, knowledge_only = $9 WHERE id = $10",
    )
    .bind(s.name)
    .bind(serde_json::to_string(s.origins)?)
    .bind(serde_json::to_string(s.limits)?)
    .bind(serde_json::to_string(s.theme)?)
    .bind(s.retention_days)
    .bind(serde_json::to_string(s.welcome)?)
    .bind(serde_json::to_string(s.app_permissions)?)
    .bind(s.attachment_types.map(serde_json::to_string).transpose()?)
    .bind(i64::from(s.knowledge_only))
    .bind(id)
    .execute(pool)
    .await?;
    Ok(())
}

/// Sets a workspace's start screen when it has none yet.
pub async fn set_workspace_welcome_if_unset(
    pool: &Pool,
    id: &str,
    welcome: &widget::wire::Welcome,
) -> anyhow::Result<()> {
    sqlx::query("UPDATE workspaces SET welcome = $1 WHERE id = $2 AND welcome = '{}'")
        .bind(serde_json::to_string(welcome)?)
        .bind(id)
        .execute(pool)
        .await?;
    Ok(())
}

pub async fn set_workspace_origins(pool: &Pool, id: &str, origins: &[String]) -> anyhow::Result<()> {
    sqlx::query("UPDATE workspaces SET allowed_origins = $1 WHERE id = $2")
        .bind(serde_json::to_string(origins)?)
        .bind(id)
        .execute(pool)
        .await?;
    Ok(())
}

const WORKSPACE_COLUMNS: &str = "id, name, allowed_origins, embed_secret_enc, limits,
    (SELECT COUNT(*) FROM caddie_links l WHERE l.workspace_id = workspaces.id) AS caddie_linked,
    embed_secret_prev_enc, embed_secret_prev_until, api_key_prev_until, theme, retention_days, welcome, app_permissions,
    attachment_types, knowledge_only, sources_version,
    (SELECT m.updated_at FROM workspace_models m WHERE m.workspace_id = workspaces.id) AS model_updated_at,
    (SELECT COUNT(*) FROM (SELECT 1 FROM knowledge_chunks c WHERE c.workspace_id = workspaces.id LIMIT 1) one)
      AS has_knowledge";

pub async fn workspace(pool: &Pool, id: &str) -> anyhow::Result<Option<WorkspaceRow>> {
    Ok(sqlx::query_as(&format!("SELECT {WORKSPACE_COLUMNS} FROM workspaces WHERE id = $1"))
        .bind(id)
        .fetch_optional(pool)
        .await?)
}

/// A workspace as the operator's list shows it.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct WorkspaceSummaryRow {
    pub id: String,
    pub name: String,
    pub allowed_origins: String,
    pub created_at: i64,
    /// Conversations begun since the time the list was asked for.
    pub conversations: i64,
}

/// The newest `limit` workspaces, each with the conversations begun since
/// `since` (ms) and its integrations' names in the order they were connected.
pub async fn workspace_summaries(
    pool: &Pool,
    since: i64,
    limit: i64,
) -> anyhow::Result<Vec<(WorkspaceSummaryRow, Vec<String>)>> {
    let rows: Vec<WorkspaceSummaryRow> = sqlx::query_as(
        "SELECT w.id, w.name, w.allowed_origins, w.created_at,
             (SELECT COUNT(*) FROM conversations c
               WHERE c.workspace_id = w.id AND c.created_at >= $1 AND c.test_run_id IS NULL) AS conversations
         FROM workspaces w ORDER BY w.created_at DESC, w.id LIMIT $2",
    )
    .bind(since)
    .bind(limit)
    .fetch_all(pool)
    .await?;
    // The listed workspaces' integrations only, in one query.
    let connected: Vec<(String, String)> = sqlx::query_as(
        "SELECT workspace_id, provider FROM integrations WHERE workspace_id IN
           (SELECT id FROM workspaces ORDER BY created_at DESC, id LIMIT $1)
         ORDER BY created_at, provider",
    )
    .bind(limit)
    .fetch_all(pool)
    .await?;
    let mut by_workspace: std::collections::HashMap<String, Vec<String>> = std::collections::HashMap::new();
    for (workspace, provider) in connected {
        by_workspace.entry(workspace).or_default().push(provider);
    }
    Ok(rows
        .into_iter()
        .map(|row| {
            let names = by_workspace.remove(&row.id).unwrap_or_default();
            (row, names)
        })
        .collect())
}

/// The workspace whose api key hashes to `hash` — its current key, or the
/// previous one until its grace ends at `now` (ms) — and whether it is the
/// current one.
pub async fn workspace_by_api_key_hash(pool: &Pool, hash: &str, now: i64) -> anyhow::Result<Option<(String, bool)>> {
    let row: Option<(String, String)> = sqlx::query_as(
        "SELECT id, api_key_hash FROM workspaces
         WHERE api_key_hash = $1 OR (api_key_prev_hash = $1 AND api_key_prev_until > $2)",
    )
    .bind(hash)
    .bind(now)
    .fetch_optional(pool)
    .await?;
    Ok(row.map(|(id, current)| (id, current == hash)))
}

/// A new embed secret (sealed); the current one becomes the previous one
/// until `previous_until` (ms). An older previous one is gone.
pub async fn rotate_embed_secret(pool: &Pool, id: &str, new_enc: &str, previous_until: i64) -> anyhow::Result<()> {
    sqlx::query(
        "UPDATE workspaces SET embed_secret_prev_enc = embed_secret_enc, embed_secret_prev_until = $1,
         embed_secret_enc = $2 WHERE id = $3",
    )
    .bind(previous_until)
    .bind(new_enc)
    .bind(id)
    .execute(pool)
    .await?;
    Ok(())
}

/// A new api key (hashed), if `current_hash` is still the current one (a
/// concurrent rotation wins once); the current one works on until
/// `previous_until` (ms). True when rotated.
pub async fn rotate_api_key(
    pool: &Pool,
    id: &str,
    current_hash: &str,
    new_hash: &str,
    previous_until: i64,
) -> anyhow::Result<bool> {
    let done = sqlx::query(
        "UPDATE workspaces SET api_key_prev_hash = api_key_hash, api_key_prev_until = $1, api_key_hash = $2
         WHERE id = $3 AND api_key_hash = $4",
    )
    .bind(previous_until)
    .bind(new_hash)
    .bind(id)
    .bind(current_hash)
    .execute(pool)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// A new or replacing integration.
pub struct NewIntegration<'a> {
    pub workspace_id: &'a str,
    pub provider: &'a str,
    pub base_url: &'a str,
    pub secret_enc: &'a str,
    pub allowed_tools: &'a [String],
    pub builtin: bool,
    /// The tool-host preset it was made from, if any.
    pub preset: Option<&'a str>,
    /// [`KIND_REMOTE_TOOLS`] or [`KIND_MCP`].
    pub kind: &'a str,
    pub trust_annotations: bool,
    /// The host's verbs by tool name, as JSON (`{}` for none).
    pub verbs: &'a str,
}

/// Connects (or re-connects, replacing) an integration.
pub async fn upsert_integration(pool: &Pool, i: NewIntegration<'_>) -> anyhow::Result<()> {
    let mut conn = pool.acquire().await?;
    let mut tx = conn.begin_write().await?;
    sqlx::query("DELETE FROM integrations WHERE workspace_id = $1 AND provider = $2")
        .bind(i.workspace_id)
        .bind(i.provider)
        .execute(&mut *tx)
        .await?;
    // A version no connect of this workspace had: the row's lock makes two
    // connects at once take one each.
    let (version,): (i64,) = sqlx::query_as(
        "UPDATE workspaces SET integration_version = integration_version + 1 WHERE id = $1 RETURNING integration_version",
    )
    .bind(i.workspace_id)
    .fetch_one(&mut *tx)
    .await?;
    sqlx::query(
        "INSERT INTO integrations (workspace_id, provider, base_url, secret_enc, allowed_tools, builtin, created_at, preset,
             kind, trust_annotations, verbs, version)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
    )
    .bind(i.workspace_id)
    .bind(i.provider)
    .bind(i.base_url)
    .bind(i.secret_enc)
    .bind(serde_json::to_string(i.allowed_tools)?)
    .bind(i64::from(i.builtin))
    .bind(now_ms())
    .bind(i.preset)
    .bind(i.kind)
    .bind(i64::from(i.trust_annotations))
    .bind(i.verbs)
    .bind(version)
    .execute(&mut *tx)
    .await?;
    sources_changed(&mut tx, i.workspace_id).await?;
    tx.commit().await?;
    Ok(())
}

/// Removes an integration; true when there was one.
pub async fn delete_integration(pool: &Pool, workspace_id: &str, provider: &str) -> anyhow::Result<bool> {
    let mut conn = pool.acquire().await?;
    let mut tx = conn.begin_write().await?;
    let done = sqlx::query("DELETE FROM integrations WHERE workspace_id = $1 AND provider = $2")
        .bind(workspace_id)
        .bind(provider)
        .execute(&mut *tx)
        .await?;
    let removed = done.rows_affected() > 0;
    if removed {
        sources_changed(&mut tx, workspace_id).await?;
    }
    tx.commit().await?;
    Ok(removed)
}

/// Moves the workspace's sources version on, in the transaction that
/// changes its integrations: what a replica opened before is read again.
async fn sources_changed(tx: &mut sqlx::Transaction<'_, sqlx::Any>, workspace_id: &str) -> anyhow::Result<()> {
    sqlx::query("UPDATE workspaces SET sources_version = sources_version + 1 WHERE id = $1")
        .bind(workspace_id)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

/// What to change of an integration; `None` leaves it.
pub struct IntegrationChange<'a> {
    pub allowed_tools: Option<&'a [String]>,
    pub trust_annotations: Option<bool>,
    /// The host's verbs by tool name, as JSON.
    pub verbs: Option<&'a str>,
}

/// Changes an integration's allowlist and classification settings; false
/// when there is none.
pub async fn update_integration(
    pool: &Pool,
    workspace_id: &str,
    provider: &str,
    change: IntegrationChange<'_>,
) -> anyhow::Result<bool> {
    let allowed = change.allowed_tools.map(serde_json::to_string).transpose()?;
    let mut conn = pool.acquire().await?;
    let mut tx = conn.begin_write().await?;
    let done = sqlx::query(
        "UPDATE integrations SET allowed_tools = COALESCE($1, allowed_tools),
             trust_annotations = COALESCE($2, trust_annotations), verbs = COALESCE($3, verbs)
         WHERE workspace_id = $4 AND provider = $5",
    )
    .bind(allowed)
    .bind(change.trust_annotations.map(i64::from))
    .bind(change.verbs)
    .bind(workspace_id)
    .bind(provider)
    .execute(&mut *tx)
    .await?;
    let changed = done.rows_affected() > 0;
    if changed {
        sources_changed(&mut tx, workspace_id).await?;
    }
    tx.commit().await?;
    Ok(changed)
}

/// Every integration of a workspace, in the order they were connected.
pub async fn integrations(pool: &Pool, workspace_id: &str) -> anyhow::Result<Vec<IntegrationRow>> {
    Ok(sqlx::query_as(&format!(
        "SELECT {INTEGRATION_COLUMNS} FROM integrations WHERE workspace_id = $1 ORDER BY created_at, provider"
    ))
    .bind(workspace_id)
    .fetch_all(pool)
    .await?)
}

/// One integration of a workspace, by its name.
pub async fn integration(pool: &Pool, workspace_id: &str, provider: &str) -> anyhow::Result<Option<IntegrationRow>> {
    Ok(sqlx::query_as(&format!(
        "SELECT {INTEGRATION_COLUMNS} FROM integrations WHERE workspace_id = $1 AND provider = $2"
    ))
    .bind(workspace_id)
    .bind(provider)
    .fetch_optional(pool)
    .await?)
}

/// A workspace's own model, as stored.
#[derive(Debug, Clone, FromRow)]
pub struct WorkspaceModelRow {
    pub base_url: String,
    pub api_key_enc: String,
    pub model: String,
    pub updated_at: i64,
    /// 1 or 0 as set; none: by the model's name.
    pub accepts_images: Option<i64>,
    /// The embeddings model at the same endpoint, if the workspace set one.
    pub embeddings_model: Option<String>,
}

impl WorkspaceModelRow {
    /// Whether the model is given images, as the workspace set it.
    pub fn accepts_images(&self) -> Option<bool> {
        self.accepts_images.map(|v| v != 0)
    }
}

/// Sets (or replaces) a workspace's own model.
pub async fn set_workspace_model(
    pool: &Pool,
    workspace_id: &str,
    base_url: &str,
    api_key_enc: &str,
    model: &str,
    accepts_images: Option<bool>,
    embeddings_model: Option<&str>,
) -> anyhow::Result<()> {
    let mut conn = pool.acquire().await?;
    let mut tx = conn.begin_write().await?;
    sqlx::query("DELETE FROM workspace_models WHERE workspace_id = $1").bind(workspace_id).execute(&mut *tx).await?;
    sqlx::query(
        "INSERT INTO workspace_models
           (workspace_id, base_url, api_key_enc, model, updated_at, accepts_images, embeddings_model)
         VALUES ($1, $2, $3, $4, $5, $6, $7)",
    )
    .bind(workspace_id)
    .bind(base_url)
    .bind(api_key_enc)
    .bind(model)
    .bind(now_ms())
    .bind(accepts_images.map(i64::from))
    .bind(embeddings_model)
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(())
}

pub async fn workspace_model(pool: &Pool, workspace_id: &str) -> anyhow::Result<Option<WorkspaceModelRow>> {
    Ok(sqlx::query_as(
        "SELECT base_url, api_key_enc, model, updated_at, accepts_images, embeddings_model
         FROM workspace_models WHERE workspace_id = $1",
    )
    .bind(workspace_id)
    .fetch_optional(pool)
    .await?)
}

/// True when there was one to delete.
pub async fn delete_workspace_model(pool: &Pool, workspace_id: &str) -> anyhow::Result<bool> {
    let done =
        sqlx::query("DELETE FROM workspace_models WHERE workspace_id = $1").bind(workspace_id).execute(pool).await?;
    Ok(done.rows_affected() > 0)
}

/// A sealed secret as stored, for re-sealing under a new key.
#[derive(Debug, Clone)]
pub struct SealedSecret {
    pub kind: SealedKind,
    pub workspace_id: String,
    pub sealed: String,
}

/// Where a sealed secret lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SealedKind {
    /// `workspaces.embed_secret_enc`.
    EmbedSecret,
    /// `workspaces.embed_secret_prev_enc` (during a rotation's grace).
    PreviousEmbedSecret,
    /// `integrations.secret_enc` (the tool host's bearer, an MCP server's headers).
    HostSecret,
    /// `workspace_models.api_key_enc` (a workspace's own model key).
    ModelKey,
}

/// Every sealed secret in the database.
pub async fn sealed_secrets(pool: &Pool) -> anyhow::Result<Vec<SealedSecret>> {
    let embed: Vec<(String, String)> =
        sqlx::query_as("SELECT id, embed_secret_enc FROM workspaces").fetch_all(pool).await?;
    let previous: Vec<(String, String)> =
        sqlx::query_as("SELECT id, embed_secret_prev_enc FROM workspaces WHERE embed_secret_prev_enc IS NOT NULL")
            .fetch_all(pool)
            .await?;
    let host: Vec<(String, String)> =
        sqlx::query_as("SELECT workspace_id, secret_enc FROM integrations").fetch_all(pool).await?;
    let model: Vec<(String, String)> =
        sqlx::query_as("SELECT workspace_id, api_key_enc FROM workspace_models").fetch_all(pool).await?;
    let of = |kind| move |(workspace_id, sealed)| SealedSecret { kind, workspace_id, sealed };
    Ok(embed
        .into_iter()
        .map(of(SealedKind::EmbedSecret))
        .chain(previous.into_iter().map(of(SealedKind::PreviousEmbedSecret)))
        .chain(host.into_iter().map(of(SealedKind::HostSecret)))
        .chain(model.into_iter().map(of(SealedKind::ModelKey)))
        .collect())
}

/// Replaces a sealed secret if it is still `old` (another replica, or a
/// new connection, may have written it meanwhile); true when replaced.
pub async fn replace_sealed(pool: &Pool, secret: &SealedSecret, new: &str) -> anyhow::Result<bool> {
    let sql = match secret.kind {
        SealedKind::EmbedSecret => {
            "UPDATE workspaces SET embed_secret_enc = $1 WHERE id = $2 AND embed_secret_enc = $3"
        }
        SealedKind::PreviousEmbedSecret => {
            "UPDATE workspaces SET embed_secret_prev_enc = $1 WHERE id = $2 AND embed_secret_prev_enc = $3"
        }
        SealedKind::HostSecret => "UPDATE integrations SET secret_enc = $1 WHERE workspace_id = $2 AND secret_enc = $3",
        SealedKind::ModelKey => {
            "UPDATE workspace_models SET api_key_enc = $1 WHERE workspace_id = $2 AND api_key_enc = $3"
        }
    };
    let done = sqlx::query(sql).bind(new).bind(&secret.workspace_id).bind(&secret.sealed).execute(pool).await?;
    Ok(done.rows_affected() == 1)
}

/// A tool-host preset, its secret sealed.
#[derive(Debug, Clone, FromRow)]
pub struct PresetRow {
    pub name: String,
    pub base_url: String,
    pub secret_enc: String,
    pub allowed_tools: String,
}

impl PresetRow {
    pub fn allowed_tools(&self) -> Vec<String> {
        serde_json::from_str(&self.allowed_tools).unwrap_or_default()
    }
}

/// Sets a preset, and the integrations made from it follow (how many).
pub async fn upsert_preset(
    pool: &Pool,
    name: &str,
    base_url: &str,
    secret_enc: &str,
    allowed_tools: &[String],
) -> anyhow::Result<u64> {
    let allowed = serde_json::to_string(allowed_tools)?;
    let mut conn = pool.acquire().await?;
    let mut tx = conn.begin_write().await?;
    sqlx::query(
        "INSERT INTO tool_presets (name, base_url, secret_enc, allowed_tools, updated_at) VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (name) DO UPDATE SET base_url = excluded.base_url, secret_enc = excluded.secret_enc,
           allowed_tools = excluded.allowed_tools, updated_at = excluded.updated_at",
    )
    .bind(name)
    .bind(base_url)
    .bind(secret_enc)
    .bind(&allowed)
    .bind(now_ms())
    .execute(&mut *tx)
    .await?;
    let following =
        sqlx::query("UPDATE integrations SET base_url = $1, secret_enc = $2, allowed_tools = $3 WHERE preset = $4")
            .bind(base_url)
            .bind(secret_enc)
            .bind(&allowed)
            .bind(name)
            .execute(&mut *tx)
            .await?
            .rows_affected();
    sqlx::query(
        "UPDATE workspaces SET sources_version = sources_version + 1
         WHERE id IN (SELECT workspace_id FROM integrations WHERE preset = $1)",
    )
    .bind(name)
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(following)
}

pub async fn preset(pool: &Pool, name: &str) -> anyhow::Result<Option<PresetRow>> {
    Ok(sqlx::query_as("SELECT name, base_url, secret_enc, allowed_tools FROM tool_presets WHERE name = $1")
        .bind(name)
        .fetch_optional(pool)
        .await?)
}

pub async fn presets(pool: &Pool) -> anyhow::Result<Vec<PresetRow>> {
    Ok(sqlx::query_as("SELECT name, base_url, secret_enc, allowed_tools FROM tool_presets ORDER BY name")
        .fetch_all(pool)
        .await?)
}

/// Spaces whose integration was made from this preset.
pub async fn preset_users(pool: &Pool, name: &str) -> anyhow::Result<i64> {
    let (n,): (i64,) =
        sqlx::query_as("SELECT COUNT(*) FROM integrations WHERE preset = $1").bind(name).fetch_one(pool).await?;
    Ok(n)
}

/// Forgets a preset; true if there was one. Integrations made from it keep
/// their copy.
pub async fn delete_preset(pool: &Pool, name: &str) -> anyhow::Result<bool> {
    let done = sqlx::query("DELETE FROM tool_presets WHERE name = $1").bind(name).execute(pool).await?;
    Ok(done.rows_affected() > 0)
}
