//! Users' feedback on replies: a thumbs up or down with an optional
//! comment, one per reply. A reply is the assistant's answer to one user
//! message, which may span several stored messages (a tool call's step,
//! then the text): its feedback is kept under the last of them, whichever
//! of them the client names.

use sqlx::FromRow;

use widget::wire::Rating;

use super::pool::Pool;
use crate::ids::now_ms;

/// The feedback on one reply.
#[derive(Debug, Clone, FromRow)]
pub struct FeedbackRow {
    pub message_id: String,
    pub conversation_id: String,
    pub external_user_id: String,
    #[sqlx(try_from = "String")]
    pub rating: Rating,
    pub comment: Option<String>,
    pub updated_at: i64,
    /// The reply's text (its last message's).
    pub reply: String,
}

/// The reply `message_id` belongs to, if it is an assistant message in one
/// of `user`'s conversations in the workspace: its conversation and the id
/// its feedback is kept under (the reply's last assistant message).
pub async fn reply_of(
    pool: &Pool,
    workspace_id: &str,
    user: &str,
    message_id: &str,
) -> anyhow::Result<Option<(String, String)>> {
    let found: Option<(String, i64)> = sqlx::query_as(
        "SELECT m.conversation_id, m.seq FROM messages m JOIN conversations c ON c.id = m.conversation_id
         WHERE m.id = $1 AND m.role = 'assistant' AND c.workspace_id = $2 AND c.external_user_id = $3",
    )
    .bind(message_id)
    .bind(workspace_id)
    .bind(user)
    .fetch_optional(pool)
    .await?;
    let Some((conversation_id, seq)) = found else { return Ok(None) };
    let last: (String,) = sqlx::query_as(
        "SELECT id FROM messages WHERE conversation_id = $1 AND role = 'assistant' AND seq >= $2
           AND seq < COALESCE((SELECT MIN(seq) FROM messages
                               WHERE conversation_id = $1 AND role = 'user' AND seq > $2), $3)
         ORDER BY seq DESC LIMIT 1",
    )
    .bind(&conversation_id)
    .bind(seq)
    .bind(i64::MAX)
    .fetch_one(pool)
    .await?;
    Ok(Some((conversation_id, last.0)))
}

/// What a user said of a reply.
pub struct NewFeedback<'a> {
    pub message_id: &'a str,
    pub conversation_id: &'a str,
    pub workspace_id: &'a str,
    pub user: &'a str,
    pub rating: Rating,
    pub comment: Option<&'a str>,
}

/// Keeps `feedback`, replacing the user's earlier feedback on the reply;
/// answers when.
pub async fn set(pool: &Pool, feedback: NewFeedback<'_>) -> anyhow::Result<i64> {
    let now = now_ms();
    sqlx::query(
        "INSERT INTO message_feedback
           (message_id, conversation_id, workspace_id, external_user_id, rating, comment, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7)
         ON CONFLICT (message_id) DO UPDATE SET rating = excluded.rating, comment = excluded.comment,
           updated_at = excluded.updated_at",
    )
    .bind(feedback.message_id)
    .bind(feedback.conversation_id)
    .bind(feedback.workspace_id)
    .bind(feedback.user)
    .bind(feedback.rating.as_str())
    .bind(feedback.comment)
    .bind(now)
    .execute(pool)
    .await?;
    Ok(now)
}

/// Takes the feedback on a reply back; false if there was none.
pub async fn clear(pool: &Pool, message_id: &str) -> anyhow::Result<bool> {
    let done = sqlx::query("DELETE FROM message_feedback WHERE message_id = $1").bind(message_id).execute(pool).await?;
    Ok(done.rows_affected() > 0)
}

const COLUMNS: &str = "f.message_id, f.conversation_id, f.external_user_id, f.rating, f.comment, f.updated_at,
    COALESCE(m.content, '') AS reply";

/// The feedback on a conversation's replies.
pub async fn in_conversation(pool: &Pool, conversation_id: &str) -> anyhow::Result<Vec<FeedbackRow>> {
    Ok(sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM message_feedback f LEFT JOIN messages m ON m.id = f.message_id
         WHERE f.conversation_id = $1"
    ))
    .bind(conversation_id)
    .fetch_all(pool)
    .await?)
}

/// Which feedback a host lists.
#[derive(Debug, Default)]
pub struct FeedbackFilter {
    pub rating: Option<Rating>,
    pub since: Option<i64>,
    pub until: Option<i64>,
    /// After this (updated_at, message_id): the cursor.
    pub after: Option<(i64, String)>,
}

/// The workspace's feedback, the newest first.
pub async fn of_workspace(
    pool: &Pool,
    workspace_id: &str,
    filter: &FeedbackFilter,
    limit: i64,
) -> anyhow::Result<Vec<FeedbackRow>> {
    let (after_at, after_id) = filter.after.clone().unzip();
    Ok(sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM message_feedback f LEFT JOIN messages m ON m.id = f.message_id
         WHERE f.workspace_id = $1 AND ($2 IS NULL OR f.rating = $2)
           AND ($3 IS NULL OR f.updated_at >= $3) AND ($4 IS NULL OR f.updated_at < $4)
           AND ($5 IS NULL OR f.updated_at < $5 OR (f.updated_at = $5 AND f.message_id < $6))
         ORDER BY f.updated_at DESC, f.message_id DESC LIMIT $7"
    ))
    .bind(workspace_id)
    .bind(filter.rating.map(Rating::as_str))
    .bind(filter.since)
    .bind(filter.until)
    .bind(after_at)
    .bind(after_id)
    .bind(limit)
    .fetch_all(pool)
    .await?)
}
