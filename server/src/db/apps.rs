//! MCP Apps in conversations: each app shown (a component of kind
//! [`KIND`] with its view: the server and tool it came from, the tool's
//! input and whole result), and what a conversation's apps may do or told
//! the model.

use sqlx::FromRow;

use super::Pool;
use crate::ids::new_id;

/// The component kind of an MCP App. A host's component kind has no dash
/// (`component::valid_kind`), so no tool result can pass for an app.
pub const KIND: &str = "mcp-app";

/// An app as shown.
#[derive(Debug, Clone, FromRow)]
pub struct AppView {
    pub component_id: String,
    pub conversation_id: String,
    pub workspace_id: String,
    pub external_user_id: String,
    /// The MCP server's integration name, and its version then.
    pub integration: String,
    pub integration_version: i64,
    /// The tool's own name on its server.
    pub tool: String,
    pub resource_uri: String,
    /// The tool's arguments (JSON).
    pub input: String,
    /// The tool's `CallToolResult` (JSON), for the app alone; empty while
    /// the tool runs or when it was cancelled.
    pub result: String,
    /// [`RUNNING`], [`DONE`] or [`CANCELLED`].
    pub status: String,
    /// Why the tool was cancelled (what the app is told).
    pub cancel_reason: Option<String>,
}

/// A view's tool is running: the app has its input, not its result.
pub const RUNNING: &str = "running";
/// The tool answered: the app has its result.
pub const DONE: &str = "done";
/// The turn ended before the tool answered.
pub const CANCELLED: &str = "cancelled";

const COLUMNS: &str = "component_id, conversation_id, workspace_id, external_user_id, integration, \
                       integration_version, tool, resource_uri, input, result, status, cancel_reason";

/// What a new view holds.
pub struct NewView<'a> {
    pub conversation_id: &'a str,
    pub workspace_id: &'a str,
    pub external_user_id: &'a str,
    /// The tool-result message the app is shown under (empty while its
    /// tool runs: [`finish`] names it), and its call.
    pub message_id: &'a str,
    pub call_id: &'a str,
    /// What the widget is told of it (the title).
    pub data: &'a serde_json::Value,
    pub integration: &'a str,
    pub integration_version: i64,
    pub tool: &'a str,
    pub resource_uri: &'a str,
    pub input: &'a serde_json::Value,
    /// The tool's result; none while it runs.
    pub result: Option<&'a serde_json::Value>,
}

/// Saves an app shown in a conversation (its component and its view, in
/// one transaction; [`RUNNING`] without a result); its component id.
pub async fn show(pool: &Pool, view: NewView<'_>, now: i64) -> anyhow::Result<String> {
    let id = new_id("cmp");
    let mut conn = pool.acquire().await?;
    let mut tx = conn.begin_write().await?;
    sqlx::query(
        "INSERT INTO components (id, conversation_id, message_id, call_id, kind, data, tools, created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6, '[]', $7, $7)",
    )
    .bind(&id)
    .bind(view.conversation_id)
    .bind(view.message_id)
    .bind(view.call_id)
    .bind(KIND)
    .bind(view.data.to_string())
    .bind(now)
    .execute(&mut *tx)
    .await?;
    sqlx::query(
        "INSERT INTO app_views (component_id, conversation_id, workspace_id, external_user_id, integration,
             integration_version, tool, resource_uri, input, result, created_at, status)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
    )
    .bind(&id)
    .bind(view.conversation_id)
    .bind(view.workspace_id)
    .bind(view.external_user_id)
    .bind(view.integration)
    .bind(view.integration_version)
    .bind(view.tool)
    .bind(view.resource_uri)
    .bind(view.input.to_string())
    .bind(view.result.map(ToString::to_string).unwrap_or_default())
    .bind(now)
    .bind(if view.result.is_some() { DONE } else { RUNNING })
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(id)
}

/// The tool of a [`RUNNING`] view answered: its result, and the message
/// the app is shown under from now on. False when the view is no longer
/// running (the turn was stopped first).
pub async fn finish(
    pool: &Pool,
    component_id: &str,
    message_id: &str,
    result: &serde_json::Value,
    now: i64,
) -> anyhow::Result<bool> {
    let mut conn = pool.acquire().await?;
    let mut tx = conn.begin_write().await?;
    let moved = sqlx::query("UPDATE app_views SET status = $1, result = $2 WHERE component_id = $3 AND status = $4")
        .bind(DONE)
        .bind(result.to_string())
        .bind(component_id)
        .bind(RUNNING)
        .execute(&mut *tx)
        .await?
        .rows_affected();
    if moved == 1 {
        sqlx::query("UPDATE components SET message_id = $1, updated_at = $2 WHERE id = $3")
            .bind(message_id)
            .bind(now)
            .bind(component_id)
            .execute(&mut *tx)
            .await?;
    }
    tx.commit().await?;
    Ok(moved == 1)
}

/// The turn ended before the tool of a [`RUNNING`] view answered: the
/// app is told `reason`. Its component stays under no message: a reload
/// does not show it again.
pub async fn cancel(pool: &Pool, component_id: &str, reason: &str) -> anyhow::Result<()> {
    sqlx::query("UPDATE app_views SET status = $1, cancel_reason = $2 WHERE component_id = $3 AND status = $4")
        .bind(CANCELLED)
        .bind(reason)
        .bind(component_id)
        .bind(RUNNING)
        .execute(pool)
        .await?;
    Ok(())
}

/// Views still [`RUNNING`] though shown before `cutoff` (ms): their turn
/// died with its process. They end [`CANCELLED`], told `reason`; how many.
pub async fn cancel_stuck(pool: &Pool, cutoff: i64, reason: &str) -> anyhow::Result<u64> {
    let moved =
        sqlx::query("UPDATE app_views SET status = $1, cancel_reason = $2 WHERE status = $3 AND created_at < $4")
            .bind(CANCELLED)
            .bind(reason)
            .bind(RUNNING)
            .bind(cutoff)
            .execute(pool)
            .await?;
    Ok(moved.rows_affected())
}

/// The view `component_id` when it is `user`'s in `workspace_id`.
pub async fn owned(pool: &Pool, component_id: &str, workspace_id: &str, user: &str) -> anyhow::Result<Option<AppView>> {
    let sql = format!(
        "SELECT {COLUMNS} FROM app_views WHERE component_id = $1 AND workspace_id = $2 AND external_user_id = $3"
    );
    Ok(sqlx::query_as(&sql).bind(component_id).bind(workspace_id).bind(user).fetch_optional(pool).await?)
}

/// The workspace of app `component_id`, if there is one.
pub async fn workspace_of(pool: &Pool, component_id: &str) -> anyhow::Result<Option<String>> {
    let row: Option<(String,)> = sqlx::query_as("SELECT workspace_id FROM app_views WHERE component_id = $1")
        .bind(component_id)
        .fetch_optional(pool)
        .await?;
    Ok(row.map(|(workspace,)| workspace))
}

/// Keeps what an app tells the model, in place of what it told before.
pub async fn set_model_context(pool: &Pool, conversation_id: &str, context: &str, now: i64) -> anyhow::Result<()> {
    sqlx::query(
        "INSERT INTO app_states (conversation_id, model_context, messages_allowed, updated_at) VALUES ($1, $2, 0, $3)
         ON CONFLICT (conversation_id) DO UPDATE SET model_context = excluded.model_context,
             updated_at = excluded.updated_at",
    )
    .bind(conversation_id)
    .bind(context)
    .bind(now)
    .execute(pool)
    .await?;
    Ok(())
}

/// Whether the user let the conversation's apps write in their name.
pub async fn messages_allowed(pool: &Pool, conversation_id: &str) -> anyhow::Result<bool> {
    let row: Option<(i64,)> = sqlx::query_as("SELECT messages_allowed FROM app_states WHERE conversation_id = $1")
        .bind(conversation_id)
        .fetch_optional(pool)
        .await?;
    Ok(row.is_some_and(|(allowed,)| allowed != 0))
}

/// Records that the user let the conversation's apps write in their name.
pub async fn allow_messages(pool: &Pool, conversation_id: &str, now: i64) -> anyhow::Result<()> {
    sqlx::query(
        "INSERT INTO app_states (conversation_id, model_context, messages_allowed, updated_at) VALUES ($1, NULL, 1, $2)
         ON CONFLICT (conversation_id) DO UPDATE SET messages_allowed = 1, updated_at = excluded.updated_at",
    )
    .bind(conversation_id)
    .bind(now)
    .execute(pool)
    .await?;
    Ok(())
}
