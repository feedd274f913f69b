//! Assistant test runs (issue #46), kept per workspace: the suite, the
//! report as cases end, how the run ended. A running run holds a lease
//! its replica renews; one whose lease lapsed (its server stopped) is
//! closed as interrupted.

use sqlx::FromRow;

use super::pool::Pool;

/// A run as kept.
#[derive(Debug, Clone, FromRow)]
pub struct TestRunRow {
    pub id: String,
    pub workspace_id: String,
    pub suite_name: String,
    pub suite: String,
    pub model: Option<String>,
    pub status: String,
    pub cases_total: i64,
    pub passed: i64,
    pub failed: i64,
    pub report: Option<String>,
    pub error: Option<String>,
    pub created_at: i64,
    pub finished_at: Option<i64>,
}

const COLUMNS: &str = "id, workspace_id, suite_name, suite, model, status, cases_total, passed, failed, report, error, \
    created_at, finished_at";

/// A run to start.
pub struct NewRun<'a> {
    pub id: &'a str,
    pub workspace_id: &'a str,
    pub suite_name: &'a str,
    pub suite: &'a str,
    pub model: Option<&'a str>,
    pub cases_total: i64,
    pub owner: &'a str,
    pub lease_until: i64,
}

/// Starts a run, unless one of the workspace's is running (its lease
/// alive): false then.
pub async fn start(pool: &Pool, run: NewRun<'_>, now: i64) -> anyhow::Result<bool> {
    close_lapsed(pool, run.workspace_id, now).await?;
    // Of two starts at once, one inserts: the other finds the running one,
    // or meets the unique index on a workspace's running run.
    let inserted = sqlx::query(
        "INSERT INTO test_runs (id, workspace_id, suite_name, suite, model, status, cases_total, lease_owner,
           lease_until, created_at)
         SELECT $1, $2, $3, $4, $5, 'running', $6, $7, $8, $9
         WHERE NOT EXISTS (SELECT 1 FROM test_runs WHERE workspace_id = $2 AND status = 'running')",
    )
    .bind(run.id)
    .bind(run.workspace_id)
    .bind(run.suite_name)
    .bind(run.suite)
    .bind(run.model)
    .bind(run.cases_total)
    .bind(run.owner)
    .bind(run.lease_until)
    .bind(now)
    .execute(pool)
    .await;
    match inserted {
        Ok(done) => Ok(done.rows_affected() == 1),
        Err(sqlx::Error::Database(e)) if e.is_unique_violation() => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// Keeps the report so far and the lease.
pub async fn progress(
    pool: &Pool,
    id: &str,
    report: &str,
    passed: i64,
    failed: i64,
    lease_until: i64,
) -> anyhow::Result<()> {
    sqlx::query(
        "UPDATE test_runs SET report = $1, passed = $2, failed = $3, lease_until = $4
         WHERE id = $5 AND status = 'running'",
    )
    .bind(report)
    .bind(passed)
    .bind(failed)
    .bind(lease_until)
    .bind(id)
    .execute(pool)
    .await?;
    Ok(())
}

/// Renews the lease of a running run.
pub async fn renew(pool: &Pool, id: &str, lease_until: i64) -> anyhow::Result<()> {
    sqlx::query("UPDATE test_runs SET lease_until = $1 WHERE id = $2 AND status = 'running'")
        .bind(lease_until)
        .bind(id)
        .execute(pool)
        .await?;
    Ok(())
}

/// How a run ended.
pub struct Ended<'a> {
    /// `passed`, `failed` or `error`.
    pub status: &'a str,
    pub report: Option<&'a str>,
    pub passed: i64,
    pub failed: i64,
    pub error: Option<&'a str>,
}

pub async fn finish(pool: &Pool, id: &str, ended: Ended<'_>, now: i64) -> anyhow::Result<()> {
    sqlx::query(
        "UPDATE test_runs SET status = $1, report = COALESCE($2, report), passed = $3, failed = $4, error = $5,
           finished_at = $6, lease_owner = NULL WHERE id = $7 AND status = 'running'",
    )
    .bind(ended.status)
    .bind(ended.report)
    .bind(ended.passed)
    .bind(ended.failed)
    .bind(ended.error)
    .bind(now)
    .bind(id)
    .execute(pool)
    .await?;
    Ok(())
}

/// Closes the workspace's runs whose server stopped running them.
pub async fn close_lapsed(pool: &Pool, workspace_id: &str, now: i64) -> anyhow::Result<()> {
    // Read first: runs are listed and read while runs write (the console
    // polls them), and an update waits for the write lock (SQLite's one
    // writer, a locked table on PostgreSQL) even when it changes nothing.
    let (lapsed,): (i64,) = sqlx::query_as(
        "SELECT COUNT(*) FROM test_runs WHERE workspace_id = $1 AND status = 'running' AND lease_until < $2",
    )
    .bind(workspace_id)
    .bind(now)
    .fetch_one(pool)
    .await?;
    if lapsed == 0 {
        return Ok(());
    }
    sqlx::query(
        "UPDATE test_runs SET status = 'error', error = 'interrupted: the server running it stopped',
           finished_at = $1, lease_owner = NULL
         WHERE workspace_id = $2 AND status = 'running' AND lease_until < $1",
    )
    .bind(now)
    .bind(workspace_id)
    .execute(pool)
    .await?;
    Ok(())
}

/// How many runs the workspace started since `since`.
pub async fn started_since(pool: &Pool, workspace_id: &str, since: i64) -> anyhow::Result<i64> {
    let (count,): (i64,) =
        sqlx::query_as("SELECT COUNT(*) FROM test_runs WHERE workspace_id = $1 AND created_at >= $2")
            .bind(workspace_id)
            .bind(since)
            .fetch_one(pool)
            .await?;
    Ok(count)
}

/// One of the workspace's runs.
pub async fn get(pool: &Pool, workspace_id: &str, id: &str) -> anyhow::Result<Option<TestRunRow>> {
    Ok(sqlx::query_as(&format!("SELECT {COLUMNS} FROM test_runs WHERE id = $1 AND workspace_id = $2"))
        .bind(id)
        .bind(workspace_id)
        .fetch_optional(pool)
        .await?)
}

/// The workspace's latest runs, newest first, without their suites and
/// reports.
pub async fn list(pool: &Pool, workspace_id: &str, limit: i64) -> anyhow::Result<Vec<TestRunRow>> {
    Ok(sqlx::query_as(
        "SELECT id, workspace_id, suite_name, '' AS suite, model, status, cases_total, passed, failed,
           CAST(NULL AS TEXT) AS report, error, created_at, finished_at
         FROM test_runs WHERE workspace_id = $1 ORDER BY created_at DESC, id DESC LIMIT $2",
    )
    .bind(workspace_id)
    .bind(limit)
    .fetch_all(pool)
    .await?)
}
