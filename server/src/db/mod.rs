//! The database: one pool over SQLite or PostgreSQL (sqlx `Any`), the
//! migrations, and every query, in one place. Queries use `$n` placeholders,
//! which both engines accept, and portable types only (TEXT, BIGINT).

use std::time::Duration;

use anyhow::Context;
use sqlx::any::{AnyPoolOptions, install_default_drivers};
use sqlx::{AnyPool, Executor, FromRow};
use widget::wire::{DisplayCard, Role, StopReason};

use crate::ids::{new_id, now_ms};

pub type Pool = AnyPool;

/// The migrations this build carries (`migrations/`).
static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("../migrations");

/// Why the database cannot serve yet.
#[derive(Debug, thiserror::Error)]
pub enum NotReady {
    #[error("the database does not answer: {0:#}")]
    Unreachable(anyhow::Error),
    #[error("{0} of this build's migrations are not applied")]
    MigrationsPending(usize),
}

/// Ready to serve: the database answers and every migration this build
/// carries is applied (another replica may still be migrating).
pub async fn check_ready(pool: &Pool) -> Result<(), NotReady> {
    let applied: Vec<(i64,)> = sqlx::query_as("SELECT version FROM _sqlx_migrations WHERE success = TRUE")
        .fetch_all(pool)
        .await
        .map_err(|e| NotReady::Unreachable(e.into()))?;
    let pending = MIGRATOR.iter().filter(|m| !applied.iter().any(|(v,)| *v == m.version)).count();
    if pending > 0 {
        return Err(NotReady::MigrationsPending(pending));
    }
    Ok(())
}

/// Opens the pool and applies the migrations.
pub async fn connect(url: &str) -> anyhow::Result<Pool> {
    install_default_drivers();
    let is_sqlite = url.starts_with("sqlite:");
    let pool = AnyPoolOptions::new()
        // SQLite has one writer: connections beyond one would only wait on
        // its lock (in sleeps of up to 100 ms), so all work shares one.
        .max_connections(if is_sqlite { 1 } else { 16 })
        .acquire_timeout(Duration::from_secs(10))
        .after_connect(move |conn, _meta| {
            Box::pin(async move {
                if is_sqlite {
                    // WAL with synchronous = NORMAL: a commit survives a crash of the
                    // process without waiting for an fsync (power loss may drop the last few).
                    // No checkpoint inside a commit: `checkpoint_in_background` does them.
                    conn.execute(
                        "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA busy_timeout = 5000; \
                         PRAGMA foreign_keys = ON; PRAGMA wal_autocheckpoint = 0;",
                    )
                    .await?;
                }
                Ok(())
            })
        })
        .connect(url)
        .await
        .context("cannot open the database named by DATABASE_URL")?;
    MIGRATOR.run(&pool).await.context("cannot apply the database migrations")?;
    if is_sqlite {
        checkpoint_in_background(url).await?;
    }
    Ok(pool)
}

/// How often SQLite's write-ahead log is copied back into the database.
const CHECKPOINT_EVERY: Duration = Duration::from_millis(500);

/// SQLite would otherwise checkpoint inside whichever commit crosses 1000
/// pages of log — a multi-millisecond stall in the middle of a turn. A
/// connection of its own checkpoints instead, `PASSIVE` (never blocking the
/// writer), twice a second, until the process ends.
async fn checkpoint_in_background(url: &str) -> anyhow::Result<()> {
    use sqlx::Connection;
    let mut conn = sqlx::AnyConnection::connect(url).await.context("cannot open the checkpoint connection")?;
    conn.execute("PRAGMA busy_timeout = 5000; PRAGMA wal_autocheckpoint = 0;").await?;
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(CHECKPOINT_EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            if let Err(error) = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").await {
                tracing::warn!(%error, "SQLite checkpoint failed; retrying");
            }
        }
    });
    Ok(())
}

#[derive(Debug, Clone, FromRow)]
pub struct WorkspaceRow {
    pub id: String,
    pub name: String,
    pub allowed_origins: String,
    pub embed_secret_enc: String,
}

impl WorkspaceRow {
    pub fn allowed_origins(&self) -> Vec<String> {
        serde_json::from_str(&self.allowed_origins).unwrap_or_default()
    }
}

#[derive(Debug, Clone, FromRow)]
pub struct IntegrationRow {
    pub workspace_id: String,
    pub provider: String,
    pub base_url: String,
    pub secret_enc: String,
    pub allowed_tools: String,
    pub builtin: i64,
}

impl IntegrationRow {
    pub fn allowed_tools(&self) -> Vec<String> {
        serde_json::from_str(&self.allowed_tools).unwrap_or_default()
    }
}

#[derive(Debug, Clone, FromRow)]
pub struct ConversationRow {
    pub id: String,
    pub workspace_id: String,
    pub external_user_id: String,
    pub title: String,
    pub updated_at: i64,
}

#[derive(Debug, Clone, FromRow)]
pub struct MessageRow {
    pub id: String,
    pub seq: i64,
    #[sqlx(try_from = "String")]
    pub role: Role,
    pub content: String,
    pub tool_calls: Option<String>,
    pub tool_call_id: Option<String>,
    pub cards: Option<String>,
    pub created_at: i64,
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

pub async fn set_workspace_origins(pool: &Pool, id: &str, origins: &[String]) -> anyhow::Result<()> {
    sqlx::query("UPDATE workspaces SET allowed_origins = $1 WHERE id = $2")
        .bind(serde_json::to_string(origins)?)
        .bind(id)
        .execute(pool)
        .await?;
    Ok(())
}

pub async fn workspace(pool: &Pool, id: &str) -> anyhow::Result<Option<WorkspaceRow>> {
    Ok(sqlx::query_as("SELECT id, name, allowed_origins, embed_secret_enc FROM workspaces WHERE id = $1")
        .bind(id)
        .fetch_optional(pool)
        .await?)
}

pub async fn workspace_by_api_key_hash(pool: &Pool, hash: &str) -> anyhow::Result<Option<WorkspaceRow>> {
    Ok(sqlx::query_as("SELECT id, name, allowed_origins, embed_secret_enc FROM workspaces WHERE api_key_hash = $1")
        .bind(hash)
        .fetch_optional(pool)
        .await?)
}

/// A new or replacing integration.
pub struct NewIntegration<'a> {
    pub workspace_id: &'a str,
    pub provider: &'a str,
    pub base_url: &'a str,
    pub secret_enc: &'a str,
    pub allowed_tools: &'a [String],
    pub builtin: bool,
}

/// Connects (or re-connects, replacing) an integration.
pub async fn upsert_integration(pool: &Pool, i: NewIntegration<'_>) -> anyhow::Result<()> {
    let mut tx = pool.begin().await?;
    sqlx::query("DELETE FROM integrations WHERE workspace_id = $1 AND provider = $2")
        .bind(i.workspace_id)
        .bind(i.provider)
        .execute(&mut *tx)
        .await?;
    sqlx::query(
        "INSERT INTO integrations (workspace_id, provider, base_url, secret_enc, allowed_tools, builtin, created_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7)",
    )
    .bind(i.workspace_id)
    .bind(i.provider)
    .bind(i.base_url)
    .bind(i.secret_enc)
    .bind(serde_json::to_string(i.allowed_tools)?)
    .bind(i64::from(i.builtin))
    .bind(now_ms())
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(())
}

/// Removes an integration; true when there was one.
pub async fn delete_integration(pool: &Pool, workspace_id: &str, provider: &str) -> anyhow::Result<bool> {
    let done = sqlx::query("DELETE FROM integrations WHERE workspace_id = $1 AND provider = $2")
        .bind(workspace_id)
        .bind(provider)
        .execute(pool)
        .await?;
    Ok(done.rows_affected() > 0)
}

pub async fn integration(pool: &Pool, workspace_id: &str) -> anyhow::Result<Option<IntegrationRow>> {
    Ok(sqlx::query_as(
        "SELECT workspace_id, provider, base_url, secret_enc, allowed_tools, builtin
         FROM integrations WHERE workspace_id = $1 ORDER BY created_at DESC LIMIT 1",
    )
    .bind(workspace_id)
    .fetch_optional(pool)
    .await?)
}

pub async fn create_conversation(
    pool: &Pool,
    workspace_id: &str,
    external_user_id: &str,
    title: &str,
) -> anyhow::Result<String> {
    let id = new_id("conv");
    let now = now_ms();
    sqlx::query(
        "INSERT INTO conversations (id, workspace_id, external_user_id, title, created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6)",
    )
    .bind(&id)
    .bind(workspace_id)
    .bind(external_user_id)
    .bind(title)
    .bind(now)
    .bind(now)
    .execute(pool)
    .await?;
    Ok(id)
}

/// The conversation, only if it belongs to this workspace and user.
pub async fn owned_conversation(
    pool: &Pool,
    id: &str,
    workspace_id: &str,
    external_user_id: &str,
) -> anyhow::Result<Option<ConversationRow>> {
    Ok(sqlx::query_as(
        "SELECT id, workspace_id, external_user_id, title, updated_at FROM conversations
         WHERE id = $1 AND workspace_id = $2 AND external_user_id = $3",
    )
    .bind(id)
    .bind(workspace_id)
    .bind(external_user_id)
    .fetch_optional(pool)
    .await?)
}

pub async fn list_conversations(
    pool: &Pool,
    workspace_id: &str,
    external_user_id: &str,
) -> anyhow::Result<Vec<ConversationRow>> {
    Ok(sqlx::query_as(
        "SELECT id, workspace_id, external_user_id, title, updated_at FROM conversations
         WHERE workspace_id = $1 AND external_user_id = $2 ORDER BY updated_at DESC LIMIT 100",
    )
    .bind(workspace_id)
    .bind(external_user_id)
    .fetch_all(pool)
    .await?)
}

pub async fn messages(pool: &Pool, conversation_id: &str) -> anyhow::Result<Vec<MessageRow>> {
    Ok(sqlx::query_as(
        "SELECT id, seq, role, content, tool_calls, tool_call_id, cards, created_at FROM messages
         WHERE conversation_id = $1 ORDER BY seq",
    )
    .bind(conversation_id)
    .fetch_all(pool)
    .await?)
}

/// A message to append to a conversation's transcript.
#[derive(Debug)]
pub struct NewMessage<'a> {
    role: Role,
    content: &'a str,
    tool_calls: Option<String>,
    tool_call_id: Option<&'a str>,
    cards: Option<String>,
}

impl<'a> NewMessage<'a> {
    /// A user's message, or an assistant's text.
    pub fn new(role: Role, content: &'a str) -> Self {
        Self { role, content, tool_calls: None, tool_call_id: None, cards: None }
    }

    /// The model's tool calls of this step (JSON), saved with its text.
    pub fn with_tool_calls(mut self, calls_json: String) -> Self {
        self.tool_calls = Some(calls_json);
        self
    }

    /// The answer to tool call `call_id`, with the cards the user was shown.
    pub fn tool_result(call_id: &'a str, content: &'a str, cards: &[DisplayCard]) -> Self {
        let cards = (!cards.is_empty()).then(|| serde_json::to_string(cards).expect("cards serialize"));
        Self { role: Role::Tool, content, tool_calls: None, tool_call_id: Some(call_id), cards }
    }
}

/// Appends a message at the end of the transcript; returns its id. One
/// statement (atomic on its own): the hot path of every turn.
pub async fn append_message(pool: &Pool, conversation_id: &str, m: NewMessage<'_>) -> anyhow::Result<String> {
    let id = new_id("msg");
    sqlx::query(
        "INSERT INTO messages (id, conversation_id, seq, role, content, tool_calls, tool_call_id, cards, created_at)
         SELECT $1, $2, COALESCE(MAX(seq), 0) + 1, $3, $4, $5, $6, $7, $8 FROM messages WHERE conversation_id = $2",
    )
    .bind(&id)
    .bind(conversation_id)
    .bind(m.role.as_str())
    .bind(m.content)
    .bind(m.tool_calls)
    .bind(m.tool_call_id)
    .bind(m.cards)
    .bind(now_ms())
    .execute(pool)
    .await?;
    Ok(id)
}

/// Records a turn's start; the conversation counts as updated now.
pub async fn start_turn(pool: &Pool, turn_id: &str, conversation_id: &str) -> anyhow::Result<()> {
    let now = now_ms();
    sqlx::query("INSERT INTO turns (id, conversation_id, started_at) VALUES ($1, $2, $3)")
        .bind(turn_id)
        .bind(conversation_id)
        .bind(now)
        .execute(pool)
        .await?;
    sqlx::query("UPDATE conversations SET updated_at = $1 WHERE id = $2")
        .bind(now)
        .bind(conversation_id)
        .execute(pool)
        .await?;
    Ok(())
}

/// Asks for a running turn of this workspace and user to stop, whichever
/// replica runs it; false when there is no such running turn.
pub async fn request_stop(pool: &Pool, turn_id: &str, workspace_id: &str, user: &str) -> anyhow::Result<bool> {
    let updated = sqlx::query(
        "UPDATE turns SET stop_requested = 1 WHERE id = $1 AND finished_at IS NULL AND conversation_id IN
           (SELECT id FROM conversations WHERE workspace_id = $2 AND external_user_id = $3)",
    )
    .bind(turn_id)
    .bind(workspace_id)
    .bind(user)
    .execute(pool)
    .await?
    .rows_affected();
    Ok(updated > 0)
}

/// Running turns someone asked to stop.
pub async fn stop_requests(pool: &Pool) -> anyhow::Result<Vec<String>> {
    let rows: Vec<(String,)> =
        sqlx::query_as("SELECT id FROM turns WHERE stop_requested = 1 AND finished_at IS NULL LIMIT 500")
            .fetch_all(pool)
            .await?;
    Ok(rows.into_iter().map(|(id,)| id).collect())
}

pub async fn finish_turn(
    pool: &Pool,
    turn_id: &str,
    stop_reason: StopReason,
    iterations: u32,
    tokens: u64,
) -> anyhow::Result<()> {
    sqlx::query("UPDATE turns SET stop_reason = $1, iterations = $2, tokens = $3, finished_at = $4 WHERE id = $5")
        .bind(stop_reason.as_str())
        .bind(i64::from(iterations))
        .bind(tokens as i64)
        .bind(now_ms())
        .bind(turn_id)
        .execute(pool)
        .await?;
    Ok(())
}

pub mod actions;
pub mod caddie;
pub mod carts;
pub mod components;
