//! The pool over SQLite or PostgreSQL (sqlx `Any`), the migrations, and
//! whether the database is ready to serve.

use std::time::Duration;

use anyhow::Context;
use sqlx::AnyPool;
use sqlx::Executor;
use sqlx::any::{AnyPoolOptions, install_default_drivers};

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
