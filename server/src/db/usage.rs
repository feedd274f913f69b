//! What workspaces used per day (`usage_days`): sums added in batches.

use super::pool::Pool;

/// One count to add: (workspace, day, metric, how many).
pub type Row = (String, i64, String, i64);

/// Rows a statement adds at most (four binds each, well below every
/// database's limit on binds).
const BATCH: usize = 250;

/// Adds each row's count to its day's sum.
pub async fn add(pool: &Pool, rows: &[Row]) -> anyhow::Result<()> {
    for batch in rows.chunks(BATCH) {
        let values: Vec<String> = (0..batch.len())
            .map(|i| format!("(${}, ${}, ${}, ${})", 4 * i + 1, 4 * i + 2, 4 * i + 3, 4 * i + 4))
            .collect();
        let sql = format!(
            "INSERT INTO usage_days (workspace_id, day, metric, count) VALUES {}
             ON CONFLICT (workspace_id, day, metric) DO UPDATE SET count = usage_days.count + excluded.count",
            values.join(", ")
        );
        let mut query = sqlx::query(&sql);
        for (workspace_id, day, metric, count) in batch {
            query = query.bind(workspace_id).bind(day).bind(metric).bind(count);
        }
        query.execute(pool).await?;
    }
    Ok(())
}

/// The workspace's sums from day `first` to day `last` (both included):
/// (day, metric, count).
pub async fn days(pool: &Pool, workspace_id: &str, first: i64, last: i64) -> anyhow::Result<Vec<(i64, String, i64)>> {
    Ok(sqlx::query_as(
        "SELECT day, metric, count FROM usage_days WHERE workspace_id = $1 AND day >= $2 AND day <= $3
         ORDER BY day, metric",
    )
    .bind(workspace_id)
    .bind(first)
    .bind(last)
    .fetch_all(pool)
    .await?)
}

/// Forgets the sums of days before `day`.
pub async fn forget_before(pool: &Pool, day: i64) -> anyhow::Result<()> {
    sqlx::query("DELETE FROM usage_days WHERE day < $1").bind(day).execute(pool).await?;
    Ok(())
}
