//! The demo bistro's kitchen: dishes marked sold out at run time, and what
//! the bistro previewed per diner and tool call, so that an execute whose
//! preview no longer holds is refused as stale (our extension).

use crate::db::Pool;

/// The dishes marked sold out at run time.
pub async fn sold_out(pool: &Pool) -> anyhow::Result<Vec<String>> {
    let rows: Vec<(String,)> = sqlx::query_as("SELECT item FROM bistro_sold_out ORDER BY item").fetch_all(pool).await?;
    Ok(rows.into_iter().map(|(item,)| item).collect())
}

/// Marks `item` sold out (`true`) or back on (`false`).
pub async fn set_sold_out(pool: &Pool, item: &str, sold_out: bool, now: i64) -> anyhow::Result<()> {
    let query = if sold_out {
        sqlx::query("INSERT INTO bistro_sold_out (item, since) VALUES ($1, $2) ON CONFLICT (item) DO NOTHING")
            .bind(item)
            .bind(now)
    } else {
        sqlx::query("DELETE FROM bistro_sold_out WHERE item = $1").bind(item)
    };
    query.execute(pool).await?;
    Ok(())
}

/// How long a preview is remembered: longer than any action lives.
const PREVIEW_KEPT_MS: i64 = 24 * 60 * 60 * 1000;

/// Remembers the preview shown for `call_id` (the latest one wins), and
/// forgets previews older than a day.
pub async fn remember_preview(
    pool: &Pool,
    customer: &str,
    call_id: &str,
    tool: &str,
    preview: &str,
    now: i64,
) -> anyhow::Result<()> {
    sqlx::query("DELETE FROM bistro_previews WHERE created_at < $1").bind(now - PREVIEW_KEPT_MS).execute(pool).await?;
    sqlx::query(
        "INSERT INTO bistro_previews (customer_key, call_id, tool, preview, created_at) VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (customer_key, call_id) DO UPDATE SET tool = $3, preview = $4, created_at = $5",
    )
    .bind(customer)
    .bind(call_id)
    .bind(tool)
    .bind(preview)
    .bind(now)
    .execute(pool)
    .await?;
    Ok(())
}

/// The preview shown for `call_id` of `tool`, if one was.
pub async fn previewed(pool: &Pool, customer: &str, call_id: &str, tool: &str) -> anyhow::Result<Option<String>> {
    let row: Option<(String,)> =
        sqlx::query_as("SELECT preview FROM bistro_previews WHERE customer_key = $1 AND call_id = $2 AND tool = $3")
            .bind(customer)
            .bind(call_id)
            .bind(tool)
            .fetch_optional(pool)
            .await?;
    Ok(row.map(|(preview,)| preview))
}

/// Forgets the preview of a call that ran.
pub async fn forget_preview(pool: &Pool, customer: &str, call_id: &str) -> anyhow::Result<()> {
    sqlx::query("DELETE FROM bistro_previews WHERE customer_key = $1 AND call_id = $2")
        .bind(customer)
        .bind(call_id)
        .execute(pool)
        .await?;
    Ok(())
}
