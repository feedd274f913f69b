//! Erasing an end user's data in a workspace (`DELETE /v1/users/{id}`):
//! their conversations with every message, turn, stream event, component,
//! app view, pending action, feedback and content gap, their attachments, their limits' counters, and the content of the
//! audit entries about them — in one transaction. What a tool host keeps
//! (a cart, an order) is the host's to erase.

use serde::Serialize;

use super::pool::Pool;

/// How many rows of each kind were erased.
#[derive(Debug, Default, Serialize, utoipa::ToSchema)]
pub struct Erased {
    pub conversations: u64,
    pub messages: u64,
    pub turns: u64,
    pub turn_events: u64,
    pub components: u64,
    pub actions: u64,
    /// Tools' requests for their input, with their answers.
    pub elicitations: u64,
    /// MCP Apps shown (their tool's input and result).
    pub apps: u64,
    /// What a conversation's apps told the model, and whether they may
    /// write for the user.
    pub app_states: u64,
    /// Their thumbs up or down on replies, with comments.
    pub feedback: u64,
    /// Their questions the knowledge did not answer (content gaps).
    pub knowledge_gaps: u64,
    /// Files they attached (their bytes are deleted from the store too).
    pub attachments: u64,
    /// Rate-limit windows and daily token counts.
    pub counters: u64,
    /// Audit entries about the user, kept with their kind and time only
    /// (earlier erasures keep theirs: they hold no content).
    pub audit_entries_scrubbed: u64,
}

/// Why an erasure did not run.
#[derive(Debug, thiserror::Error)]
pub enum EraseError {
    #[error("a turn of this user's is running")]
    TurnRunning,
    #[error(transparent)]
    Db(#[from] anyhow::Error),
}

impl From<sqlx::Error> for EraseError {
    fn from(error: sqlx::Error) -> Self {
        EraseError::Db(error.into())
    }
}

const THEIR_CONVERSATIONS: &str = "SELECT id FROM conversations WHERE workspace_id = $1 AND external_user_id = $2";

/// Deletes the conversations `scope` selects (a query of their ids, with
/// `$1` and `$2` bound to `a` and `b`) with everything that hangs off
/// them, counting into `erased`.
pub(super) async fn delete_conversations(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    scope: &str,
    a: &str,
    b: &str,
    erased: &mut Erased,
) -> Result<(), sqlx::Error> {
    let of = |sql: &str| sql.replace("{scope}", scope);
    // Which attachments the messages sent (the attachments themselves are
    // their user's, erased with the user or by retention).
    let links = of("DELETE FROM message_attachments WHERE message_id IN
                    (SELECT id FROM messages WHERE conversation_id IN ({scope}))");
    sqlx::query(&links).bind(a).bind(b).execute(&mut **tx).await?;
    for (count, sql) in [
        (
            &mut erased.turn_events,
            of("DELETE FROM turn_events WHERE turn_id IN (SELECT id FROM turns WHERE conversation_id IN ({scope}))"),
        ),
        (&mut erased.components, of("DELETE FROM components WHERE conversation_id IN ({scope})")),
        (&mut erased.elicitations, of("DELETE FROM elicitations WHERE conversation_id IN ({scope})")),
        (&mut erased.apps, of("DELETE FROM app_views WHERE conversation_id IN ({scope})")),
        (&mut erased.app_states, of("DELETE FROM app_states WHERE conversation_id IN ({scope})")),
        (&mut erased.feedback, of("DELETE FROM message_feedback WHERE conversation_id IN ({scope})")),
        (&mut erased.knowledge_gaps, of("DELETE FROM knowledge_gaps WHERE conversation_id IN ({scope})")),
        (&mut erased.messages, of("DELETE FROM messages WHERE conversation_id IN ({scope})")),
        (&mut erased.actions, of("DELETE FROM actions WHERE conversation_id IN ({scope})")),
        (&mut erased.turns, of("DELETE FROM turns WHERE conversation_id IN ({scope})")),
        (&mut erased.conversations, of("DELETE FROM conversations WHERE id IN ({scope})")),
    ] {
        *count += sqlx::query(&sql).bind(a).bind(b).execute(&mut **tx).await?.rows_affected();
    }
    Ok(())
}

/// Erases everything stored for `user` in `workspace_id`; with it, the
/// store keys of their attachments' bytes, for the caller to delete once
/// the rows are gone.
pub async fn erase_user(pool: &Pool, workspace_id: &str, user: &str) -> Result<(Erased, Vec<String>), EraseError> {
    let mut conn = pool.acquire().await?;
    let mut tx = conn.begin_write().await?;
    let running: (i64,) = sqlx::query_as(&format!(
        "SELECT COUNT(*) FROM turns WHERE finished_at IS NULL AND conversation_id IN ({THEIR_CONVERSATIONS})"
    ))
    .bind(workspace_id)
    .bind(user)
    .fetch_one(&mut *tx)
    .await?;
    if running.0 > 0 {
        return Err(EraseError::TurnRunning);
    }
    let mut erased = Erased::default();
    delete_conversations(&mut tx, THEIR_CONVERSATIONS, workspace_id, user, &mut erased).await?;
    let objects: Vec<(String,)> =
        sqlx::query_as("SELECT object_key FROM attachments WHERE workspace_id = $1 AND external_user_id = $2")
            .bind(workspace_id)
            .bind(user)
            .fetch_all(&mut *tx)
            .await?;
    erased.attachments = sqlx::query("DELETE FROM attachments WHERE workspace_id = $1 AND external_user_id = $2")
        .bind(workspace_id)
        .bind(user)
        .execute(&mut *tx)
        .await?
        .rows_affected();
    // The keys `limits.rs` counts this user under.
    let windows = [format!("turn:user:{workspace_id}:{user}"), format!("call:user:{workspace_id}:{user}")];
    for key in &windows {
        erased.counters +=
            sqlx::query("DELETE FROM rate_windows WHERE key = $1").bind(key).execute(&mut *tx).await?.rows_affected();
    }
    for key in [format!("tokens:user:{workspace_id}:{user}"), format!("attachments:user:{workspace_id}:{user}")] {
        erased.counters +=
            sqlx::query("DELETE FROM token_usage WHERE key = $1").bind(key).execute(&mut *tx).await?.rows_affected();
    }
    // The keys of their sends (`idempotency_keys`), counted with the counters.
    erased.counters += sqlx::query("DELETE FROM idempotency_keys WHERE workspace_id = $1 AND external_user_id = $2")
        .bind(workspace_id)
        .bind(user)
        .execute(&mut *tx)
        .await?
        .rows_affected();
    erased.audit_entries_scrubbed = sqlx::query(
        "UPDATE audit_log SET username = NULL, detail = '{\"erased\":true}' WHERE workspace_id = $1 AND username = $2
         AND action <> 'user.erased'",
    )
    .bind(workspace_id)
    .bind(user)
    .execute(&mut *tx)
    .await?
    .rows_affected();
    tx.commit().await?;
    Ok((erased, objects.into_iter().map(|(key,)| key).collect()))
}
