//! Pending actions and their state machine. Every transition is one
//! conditional UPDATE whose row count says whether this caller won it.
//! Statuses and verbs are stored as their wire words ([`ActionStatus`],
//! [`Verb`]) and mapped back here, once.

use sqlx::FromRow;
use widget::wire::{ActionStatus, Verb};

use super::Pool;
use crate::ids::{new_id, now_ms};

/// An action as stored.
#[derive(Debug, Clone, FromRow)]
pub struct ActionRow {
    pub id: String,
    pub conversation_id: String,
    pub workspace_id: String,
    pub external_user_id: String,
    pub permissions: String,
    pub call_id: String,
    pub tool: String,
    #[sqlx(try_from = "String")]
    pub verb: Verb,
    pub arguments: String,
    pub preview: String,
    #[sqlx(try_from = "String")]
    pub status: ActionStatus,
    /// 2 for a delete (confirm, then apply), else 1.
    #[sqlx(try_from = "i64")]
    pub confirmations_required: u8,
    pub created_at: i64,
    pub expires_at: i64,
    /// The integration it was previewed on: base URL and version.
    pub integration_url: Option<String>,
    pub integration_version: Option<i64>,
    /// The stale action this one is the fresh preview of.
    pub replaces: Option<String>,
    /// The integration that previewed it (None: from before there were
    /// several, the Remote Tools host).
    pub integration: Option<String>,
    /// The digest of the tool's definition when it was previewed.
    pub tool_digest: Option<String>,
    /// The MCP App (its component) that asked for it; None: the model did.
    pub app_component_id: Option<String>,
}

impl ActionRow {
    /// The integration that previewed it.
    pub fn integration(&self) -> &str {
        self.integration.as_deref().unwrap_or(super::REMOTE_TOOLS_PROVIDER)
    }

    pub fn permissions(&self) -> Vec<String> {
        serde_json::from_str(&self.permissions).unwrap_or_default()
    }

    pub fn arguments(&self) -> serde_json::Value {
        serde_json::from_str(&self.arguments).unwrap_or_default()
    }

    pub fn is_expired(&self, now: i64) -> bool {
        self.expires_at <= now
    }

    /// A delete: it must be confirmed before it is applied.
    pub fn needs_confirmation(&self) -> bool {
        self.confirmations_required == 2
    }

    /// Asked for by an MCP App, not by the model: no tool call of the
    /// conversation waits for it.
    pub fn from_app(&self) -> bool {
        self.app_component_id.is_some()
    }
}

const COLUMNS: &str = "id, conversation_id, workspace_id, external_user_id, permissions, call_id, tool, verb, \
                       arguments, preview, status, confirmations_required, created_at, expires_at, \
                       integration_url, integration_version, replaces, integration, tool_digest, app_component_id";

/// What a new action freezes.
pub struct NewAction<'a> {
    pub conversation_id: &'a str,
    pub workspace_id: &'a str,
    pub external_user_id: &'a str,
    pub permissions: &'a [String],
    pub call_id: &'a str,
    pub tool: &'a str,
    pub verb: Verb,
    pub arguments: &'a serde_json::Value,
    pub preview: &'a str,
    pub ttl_ms: i64,
    pub integration_url: Option<&'a str>,
    pub integration_version: Option<i64>,
    /// The stale action it replaces, if it is a fresh preview of one.
    pub replaces: Option<&'a str>,
    /// The integration that previews it, and its tool's digest.
    pub integration: &'a str,
    pub tool_digest: &'a str,
    /// The MCP App that asks for it (None: the model).
    pub app_component_id: Option<&'a str>,
}

/// Freezes a new action, `pending` until `now` + its time to live.
pub async fn insert(pool: &Pool, a: NewAction<'_>, now: i64) -> anyhow::Result<ActionRow> {
    let id = new_id("act");
    sqlx::query(
        "INSERT INTO actions (id, conversation_id, workspace_id, external_user_id, permissions, call_id, tool, verb,
             arguments, preview, status, confirmations_required, created_at, expires_at, updated_at,
            integration_url, integration_version, replaces, integration, tool_digest, app_component_id)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, 'pending', $11, $12, $13, $14, $15, $16, $17, $18, $19, $20)",
    )
    .bind(&id)
    .bind(a.conversation_id)
    .bind(a.workspace_id)
    .bind(a.external_user_id)
    .bind(serde_json::to_string(a.permissions)?)
    .bind(a.call_id)
    .bind(a.tool)
    .bind(a.verb.as_str())
    .bind(a.arguments.to_string())
    .bind(a.preview)
    .bind(i64::from(a.verb.confirmations_required()))
    .bind(now)
    .bind(now + a.ttl_ms)
    .bind(now)
    .bind(a.integration_url)
    .bind(a.integration_version)
    .bind(a.replaces)
    .bind(a.integration)
    .bind(a.tool_digest)
    .bind(a.app_component_id)
    .execute(pool)
    .await?;
    let action = get(pool, &id).await?.ok_or_else(|| anyhow::anyhow!("the action just written is missing"))?;
    let detail = serde_json::json!({
        "action_id": action.id, "conversation_id": action.conversation_id, "verb": action.verb.as_str(),
        "preview": action.preview, "arguments": a.arguments, "replaces": a.replaces,
    });
    record_life(pool, &action, origin_actor(&action), "action.previewed", None, detail).await;
    Ok(action)
}

/// Who proposed `action`, as the audit trail's actor: `assistant` (the
/// model) or `app` (an MCP App of the conversation).
pub fn origin_actor(action: &ActionRow) -> &'static str {
    if action.from_app() { "app" } else { "assistant" }
}

/// Records a step of `action`'s life in the audit trail (with its tool and
/// user; an app's action says so, and which app). A failure to record is
/// logged, never the user's failure.
pub async fn record_life(
    pool: &Pool,
    action: &ActionRow,
    actor: &str,
    event: &str,
    outcome: Option<&str>,
    mut detail: serde_json::Value,
) {
    if let (Some(component), Some(fields)) = (&action.app_component_id, detail.as_object_mut()) {
        fields.insert("origin".into(), "app".into());
        fields.insert("component_id".into(), component.clone().into());
    }
    let entry = super::audit::Entry {
        actor,
        action: event,
        workspace_id: Some(&action.workspace_id),
        username: Some(&action.external_user_id),
        tool: Some(&action.tool),
        outcome,
        detail: &detail,
    };
    if let Err(error) = super::audit::record_entry(pool, entry).await {
        tracing::error!(error = format!("{error:#}"), action_id = %action.id, event, "audit entry not recorded");
    }
}

/// `user:{sub}`: an end user as the audit trail's actor.
pub fn user_actor(action: &ActionRow) -> String {
    format!("user:{}", action.external_user_id)
}

pub async fn get(pool: &Pool, id: &str) -> anyhow::Result<Option<ActionRow>> {
    Ok(sqlx::query_as(&format!("SELECT {COLUMNS} FROM actions WHERE id = $1")).bind(id).fetch_optional(pool).await?)
}

/// The actions a conversation's turns proposed, oldest first.
pub async fn in_conversation(pool: &Pool, conversation_id: &str) -> anyhow::Result<Vec<ActionRow>> {
    Ok(sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM actions WHERE conversation_id = $1 AND app_component_id IS NULL ORDER BY created_at, id"
    ))
    .bind(conversation_id)
    .fetch_all(pool)
    .await?)
}

/// The model's action, only if it belongs to this workspace and user.
pub async fn owned(pool: &Pool, id: &str, workspace_id: &str, user: &str) -> anyhow::Result<Option<ActionRow>> {
    Ok(sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM actions WHERE id = $1 AND workspace_id = $2 AND external_user_id = $3 \
         AND app_component_id IS NULL"
    ))
    .bind(id)
    .bind(workspace_id)
    .bind(user)
    .fetch_optional(pool)
    .await?)
}

/// The action `component` (an MCP App of this workspace and user) asked for.
pub async fn of_app(
    pool: &Pool,
    id: &str,
    component: &str,
    workspace_id: &str,
    user: &str,
) -> anyhow::Result<Option<ActionRow>> {
    Ok(sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM actions WHERE id = $1 AND app_component_id = $2 AND workspace_id = $3 \
         AND external_user_id = $4"
    ))
    .bind(id)
    .bind(component)
    .bind(workspace_id)
    .bind(user)
    .fetch_optional(pool)
    .await?)
}

/// The open action (pending or confirmed once, not expired at `now`) an
/// app asked for, if any: an app has one change waiting at a time.
pub async fn open_of_app(pool: &Pool, component: &str, now: i64) -> anyhow::Result<Option<ActionRow>> {
    Ok(sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM actions WHERE app_component_id = $1 AND status IN ('pending', 'confirmed_once') \
         AND expires_at > $2 LIMIT 1"
    ))
    .bind(component)
    .bind(now)
    .fetch_optional(pool)
    .await?)
}

/// The conversation's open action (pending or confirmed once) of the
/// model's, if any (an app's waits in the app's chrome, not the chat's).
pub async fn open_in_conversation(pool: &Pool, conversation_id: &str) -> anyhow::Result<Option<ActionRow>> {
    Ok(sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM actions WHERE conversation_id = $1 AND status IN ('pending', 'confirmed_once')
         AND app_component_id IS NULL ORDER BY created_at DESC LIMIT 1"
    ))
    .bind(conversation_id)
    .fetch_optional(pool)
    .await?)
}

/// Moves `id` from one of `from` to `to` if it has not expired at `now`;
/// true when this call made the move.
pub async fn transition(
    pool: &Pool,
    id: &str,
    from: &[ActionStatus],
    to: ActionStatus,
    now: i64,
) -> anyhow::Result<bool> {
    // `from` holds our own status words, never user input.
    let from_list = from.iter().map(|s| format!("'{s}'")).collect::<Vec<_>>().join(", ");
    let done = sqlx::query(&format!(
        "UPDATE actions SET status = $1, updated_at = $2 WHERE id = $3 AND status IN ({from_list}) AND expires_at > $4"
    ))
    .bind(to.as_str())
    .bind(now)
    .bind(id)
    .bind(now)
    .execute(pool)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Actions still waiting for the user (`pending`, `confirmed_once`, not
/// expired at `now`) or for the host (`executing`), by status: every
/// workspace's, for metrics.
pub async fn count_open(pool: &Pool, now: i64) -> anyhow::Result<Vec<(ActionStatus, i64)>> {
    let rows: Vec<(String, i64)> = sqlx::query_as(
        "SELECT status, COUNT(*) FROM actions \
         WHERE status = 'executing' OR (status IN ('pending', 'confirmed_once') AND expires_at > $1) \
         GROUP BY status",
    )
    .bind(now)
    .fetch_all(pool)
    .await?;
    let counted = |status: ActionStatus| rows.iter().find(|(s, _)| s == status.as_str()).map_or(0, |(_, n)| *n);
    Ok([ActionStatus::Pending, ActionStatus::ConfirmedOnce, ActionStatus::Executing]
        .into_iter()
        .map(|status| (status, counted(status)))
        .collect())
}

/// Records how an execution ended (from `executing` only).
pub async fn finish(pool: &Pool, id: &str, status: ActionStatus) -> anyhow::Result<()> {
    sqlx::query("UPDATE actions SET status = $1, updated_at = $2 WHERE id = $3 AND status = 'executing'")
        .bind(status.as_str())
        .bind(now_ms())
        .bind(id)
        .execute(pool)
        .await?;
    Ok(())
}

/// Marks the action `expired` if it is open and past its expiry at `now`.
pub async fn expire(pool: &Pool, id: &str, now: i64) -> anyhow::Result<()> {
    let moved = sqlx::query(
        "UPDATE actions SET status = 'expired', updated_at = $1
         WHERE id = $2 AND status IN ('pending', 'confirmed_once') AND expires_at <= $3",
    )
    .bind(now)
    .bind(id)
    .bind(now)
    .execute(pool)
    .await?
    .rows_affected();
    if moved == 1
        && let Some(action) = get(pool, id).await?
    {
        record_life(pool, &action, "system", "action.expired", None, serde_json::json!({ "action_id": id })).await;
    }
    Ok(())
}

/// Cancels every open action the model proposed in a conversation (the
/// user moved on); returns those it cancelled. An app's stays: its app
/// still shows it.
pub async fn supersede_open(pool: &Pool, conversation_id: &str) -> anyhow::Result<Vec<ActionRow>> {
    let open: Vec<ActionRow> = sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM actions WHERE conversation_id = $1 AND status IN ('pending', 'confirmed_once') \
         AND app_component_id IS NULL"
    ))
    .bind(conversation_id)
    .fetch_all(pool)
    .await?;
    let mut cancelled = Vec::new();
    for action in open {
        let moved = sqlx::query(
            "UPDATE actions SET status = 'cancelled', updated_at = $1 WHERE id = $2 AND status IN ('pending', 'confirmed_once')",
        )
        .bind(now_ms())
        .bind(&action.id)
        .execute(pool)
        .await?;
        if moved.rows_affected() == 1 {
            let detail =
                serde_json::json!({ "action_id": action.id, "reason": "superseded: the user sent a new message" });
            record_life(pool, &action, &user_actor(&action), "action.cancelled", None, detail).await;
            cancelled.push(action);
        }
    }
    Ok(cancelled)
}

/// Actions left `executing` since before `cutoff` (unix ms): the process
/// that called the host died before it could record the outcome. Each is
/// moved to `failed` by a conditional update — it is never run again — and
/// returned once, to whoever moved it.
pub async fn abandon_stuck(pool: &Pool, cutoff: i64) -> anyhow::Result<Vec<ActionRow>> {
    let stuck: Vec<ActionRow> = sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM actions WHERE status = 'executing' AND updated_at < $1 LIMIT 100"
    ))
    .bind(cutoff)
    .fetch_all(pool)
    .await?;
    let mut moved = Vec::new();
    for action in stuck {
        let won = sqlx::query(
            "UPDATE actions SET status = 'failed', updated_at = $1 WHERE id = $2 AND status = 'executing' AND updated_at < $3",
        )
        .bind(now_ms())
        .bind(&action.id)
        .bind(cutoff)
        .execute(pool)
        .await?
        .rows_affected();
        if won == 1 {
            let detail = serde_json::json!({ "action_id": action.id, "error": "interrupted: the outcome is unknown" });
            record_life(pool, &action, "system", "action.executed", Some("unknown"), detail).await;
            moved.push(action);
        }
    }
    Ok(moved)
}
