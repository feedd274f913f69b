//! Turns: when each started and ended, why, and stop requests that any
//! replica can see.

use widget::wire::StopReason;

use super::conversations::{
    HeldResult, NewMessage, bind_held, bind_message, held_inserts, insert_message_after, together,
};
use super::limits::add_tokens_sql;
use super::pool::Pool;
use crate::ids::{new_id, now_ms};

/// The conversation counts as updated now (a turn started; its row was
/// written when it claimed the conversation, `limits::claim_turn`).
pub async fn touch_conversation(pool: &Pool, conversation_id: &str) -> anyhow::Result<()> {
    let now = now_ms();
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

/// The tokens a finished turn spent (none while it runs).
pub async fn turn_tokens(pool: &Pool, turn_id: &str) -> anyhow::Result<Option<u64>> {
    let tokens: Option<(Option<i64>,)> =
        sqlx::query_as("SELECT tokens FROM turns WHERE id = $1").bind(turn_id).fetch_optional(pool).await?;
    Ok(tokens.and_then(|(t,)| t).map(|t| u64::try_from(t).unwrap_or(0)))
}

/// Running turns someone asked to stop.
pub async fn stop_requests(pool: &Pool) -> anyhow::Result<Vec<String>> {
    let rows: Vec<(String,)> =
        sqlx::query_as("SELECT id FROM turns WHERE stop_requested = 1 AND finished_at IS NULL LIMIT 500")
            .fetch_all(pool)
            .await?;
    Ok(rows.into_iter().map(|(id,)| id).collect())
}

/// A turn's end, as recorded.
pub struct TurnEnd<'a> {
    pub turn_id: &'a str,
    pub stop_reason: StopReason,
    pub iterations: u32,
    pub tokens: u64,
}

/// Tokens counted against the day's budgets (`day`, UTC): each budget's
/// key with its tokens (none: nothing to count).
pub struct Spending<'a> {
    pub day: i64,
    pub counts: &'a [(String, i64)],
}

/// Saves the turn's held tool results and its reply `m` at the end of the
/// conversation's transcript, counts the tokens of its last step against
/// the budgets and records the turn's end, in one write; returns the
/// reply's id.
pub async fn finish_turn_with_reply(
    pool: &Pool,
    conversation_id: &str,
    held: &[HeldResult],
    m: NewMessage<'_>,
    end: &TurnEnd<'_>,
    spent: &Spending<'_>,
) -> anyhow::Result<String> {
    let postgres = pool.is_postgres();
    // The reply `$1`–`$9`, the end `$10`–`$13`, the tokens (when budgets
    // count them) from `$14`, the held results after them.
    let n = spent.counts.len();
    let first_held = if n == 0 { 14 } else { 15 + 2 * n };
    let mut statements = held_inserts(held.len(), 2, first_held, postgres);
    statements.push(insert_message_after(held.len(), postgres));
    if n > 0 {
        statements.push(add_tokens_sql(14, n));
    }
    statements.push(
        "UPDATE turns SET stop_reason = $10, iterations = $11, tokens = $12, finished_at = $8 WHERE id = $13".into(),
    );
    let sql = together(&statements, postgres);
    let id = new_id("msg");
    let query = bind_message(sqlx::query(&sql), &id, conversation_id, m, now_ms());
    let mut query =
        query.bind(end.stop_reason.as_str()).bind(i64::from(end.iterations)).bind(end.tokens as i64).bind(end.turn_id);
    if n > 0 {
        query = query.bind(spent.day);
        for (key, tokens) in spent.counts {
            query = query.bind(key.as_str()).bind(*tokens);
        }
    }
    pool.write_together(bind_held(query, held)).await?;
    Ok(id)
}

/// Appends the turn's held tool results and the message of a model step
/// that called tools, `m`, and counts the step's tokens against the day's
/// budgets, in one write; returns the message's id and each budget's total
/// for the day so far (the next step checks them).
pub async fn append_step_spending(
    pool: &Pool,
    conversation_id: &str,
    held: &[HeldResult],
    m: NewMessage<'_>,
    spent: &Spending<'_>,
) -> anyhow::Result<(String, Vec<(String, i64)>)> {
    use sqlx::Row;
    let postgres = pool.is_postgres();
    // The message `$1`–`$9`, the tokens from `$10`, the held results after them.
    let n = spent.counts.len();
    let mut statements = held_inserts(held.len(), 2, 11 + 2 * n, postgres);
    statements.push(insert_message_after(held.len(), postgres));
    statements.push(format!("{} RETURNING key, tokens", add_tokens_sql(10, n)));
    let sql = together(&statements, postgres);
    let id = new_id("msg");
    let mut query = bind_message(sqlx::query(&sql), &id, conversation_id, m, now_ms()).bind(spent.day);
    for (key, tokens) in spent.counts {
        query = query.bind(key.as_str()).bind(*tokens);
    }
    let rows = pool.write_together(bind_held(query, held)).await?;
    let totals = rows.iter().map(|row| Ok((row.try_get(0)?, row.try_get(1)?))).collect::<Result<_, sqlx::Error>>()?;
    Ok((id, totals))
}

/// Records the turn's end (its reply, if any, already saved).
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
