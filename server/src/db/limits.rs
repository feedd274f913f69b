//! What the limits count, shared by every replica through the database:
//! fixed windows of requests, tokens per day, and the one running turn of
//! a conversation.

use widget::wire::StopReason;

use super::pool::Pool;

/// Counts one more request for `key` in the window starting at
/// `window_start`; the count so far, this one included.
pub async fn hit(pool: &Pool, key: &str, window_start: i64) -> anyhow::Result<i64> {
    let (count,): (i64,) = sqlx::query_as(
        "INSERT INTO rate_windows (key, window_start, count) VALUES ($1, $2, 1)
         ON CONFLICT (key, window_start) DO UPDATE SET count = rate_windows.count + 1
         RETURNING count",
    )
    .bind(key)
    .bind(window_start)
    .fetch_one(pool)
    .await?;
    Ok(count)
}

/// [`hit`] for several keys, with the tokens each of `budgets` used on
/// `day` read in the same call (issue #47: a turn's admission is one round
/// trip to the database): each key's count so far, and each budget's use
/// (a budget that used none is absent).
pub async fn hit_all_reading_tokens(
    pool: &Pool,
    keys: &[String],
    window_start: i64,
    budgets: &[String],
    day: i64,
) -> anyhow::Result<(Vec<(String, i64)>, Vec<(String, i64)>)> {
    use sqlx::Row;
    let values: Vec<String> = (0..keys.len()).map(|i| format!("(${}, $1, 1)", i + 2)).collect();
    let hit = format!(
        "INSERT INTO rate_windows (key, window_start, count) VALUES {}
         ON CONFLICT (key, window_start) DO UPDATE SET count = rate_windows.count + 1",
        values.join(", ")
    );
    let day_at = keys.len() + 2;
    let places: Vec<String> = (0..budgets.len()).map(|i| format!("${}", day_at + 1 + i)).collect();
    // Each row says which it is: a window's count or a budget's use.
    let used = format!(
        "SELECT 'used' AS kind, key, tokens FROM token_usage WHERE day = ${day_at} AND key IN ({})",
        places.join(", ")
    );
    let sql = match (budgets.is_empty(), pool.is_postgres()) {
        (true, _) => format!("{hit} RETURNING 'count' AS kind, key, count"),
        (false, true) => format!(
            "WITH hit AS ({hit} RETURNING key, count) SELECT 'count' AS kind, key, count FROM hit UNION ALL {used}"
        ),
        (false, false) => format!("{hit} RETURNING 'count' AS kind, key, count; {used}"),
    };
    let mut query = sqlx::query(&sql).bind(window_start);
    for key in keys {
        query = query.bind(key);
    }
    let rows = if budgets.is_empty() {
        query.fetch_all(pool).await?
    } else {
        query = query.bind(day);
        for key in budgets {
            query = query.bind(key);
        }
        pool.write_together(query).await?
    };
    let (mut counts, mut used) = (Vec::with_capacity(keys.len()), Vec::with_capacity(budgets.len()));
    for row in rows {
        let kind: String = row.try_get(0)?;
        let pair = (row.try_get(1)?, row.try_get(2)?);
        if kind == "count" { counts.push(pair) } else { used.push(pair) }
    }
    Ok((counts, used))
}

/// Adds each key's tokens to its use on `day` (one statement); each key's
/// total for the day so far.
pub async fn add_tokens(pool: &Pool, spent: &[(String, i64)], day: i64) -> anyhow::Result<Vec<(String, i64)>> {
    let sql = format!("{} RETURNING key, tokens", add_tokens_sql(1, spent.len()));
    let mut query = sqlx::query_as(&sql).bind(day);
    for (key, tokens) in spent {
        query = query.bind(key).bind(tokens);
    }
    Ok(query.fetch_all(pool).await?)
}

/// The statement that adds `keys` keys' tokens to their use on a day: the
/// day is parameter `$first`, then each key and its tokens.
pub(super) fn add_tokens_sql(first: usize, keys: usize) -> String {
    let values: Vec<String> =
        (0..keys).map(|i| format!("(${}, ${first}, ${})", first + 2 * i + 1, first + 2 * i + 2)).collect();
    format!(
        "INSERT INTO token_usage (key, day, tokens) VALUES {}
         ON CONFLICT (key, day) DO UPDATE SET tokens = token_usage.tokens + excluded.tokens",
        values.join(", ")
    )
}

/// Claims the conversation for a new turn: false when a turn of it is
/// still running (on any replica). A turn started before `stale_before`
/// and never finished (its process died) is recorded as interrupted first
/// — looked for only when the claim meets a running turn, so the common
/// case is one statement.
pub async fn claim_turn(
    pool: &Pool,
    turn_id: &str,
    conversation_id: &str,
    now: i64,
    stale_before: i64,
) -> anyhow::Result<bool> {
    if insert_running_turn(pool, turn_id, conversation_id, now).await? {
        return Ok(true);
    }
    let interrupted = sqlx::query(
        "UPDATE turns SET finished_at = $1, stop_reason = $2
         WHERE conversation_id = $3 AND finished_at IS NULL AND started_at < $4",
    )
    .bind(now)
    .bind(StopReason::Interrupted.as_str())
    .bind(conversation_id)
    .bind(stale_before)
    .execute(pool)
    .await?;
    Ok(interrupted.rows_affected() > 0 && insert_running_turn(pool, turn_id, conversation_id, now).await?)
}

/// Inserts the turn as running unless one of the conversation already is.
async fn insert_running_turn(pool: &Pool, turn_id: &str, conversation_id: &str, now: i64) -> anyhow::Result<bool> {
    let inserted = sqlx::query(
        "INSERT INTO turns (id, conversation_id, started_at) VALUES ($1, $2, $3)
         ON CONFLICT (conversation_id) WHERE finished_at IS NULL DO NOTHING",
    )
    .bind(turn_id)
    .bind(conversation_id)
    .bind(now)
    .execute(pool)
    .await?;
    Ok(inserted.rows_affected() == 1)
}

/// Gives back a claimed conversation whose turn did not start.
pub async fn release_turn(pool: &Pool, turn_id: &str) -> anyhow::Result<()> {
    sqlx::query("DELETE FROM turns WHERE id = $1 AND finished_at IS NULL").bind(turn_id).execute(pool).await?;
    Ok(())
}

/// Forgets windows and daily counts that can no longer matter.
pub async fn forget_old(pool: &Pool, windows_before: i64, days_before: i64) -> anyhow::Result<()> {
    sqlx::query("DELETE FROM rate_windows WHERE window_start < $1").bind(windows_before).execute(pool).await?;
    sqlx::query("DELETE FROM token_usage WHERE day < $1").bind(days_before).execute(pool).await?;
    Ok(())
}
