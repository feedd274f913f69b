//! The database handle over SQLite or PostgreSQL (sqlx `Any`), the
//! migrations, and whether the database is ready to serve.
//!
//! PostgreSQL is a pool of connections. SQLite is one connection behind a
//! fair lock: it has one writer, and sqlx's pool would add two round trips
//! to SQLite's thread per statement (a check of the connection before and
//! after each use) and a task per release — most of a turn's system time.

use std::ops::{Deref, DerefMut};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use futures::future::BoxFuture;
use futures::stream::BoxStream;
use futures::{StreamExt, TryStreamExt};
use sqlx::any::{AnyPoolOptions, AnyQueryResult, AnyRow, AnyStatement, AnyTypeInfo, install_default_drivers};
use sqlx::pool::PoolConnection;
use sqlx::{Any, AnyConnection, AnyPool, Connection, Describe, Either, Execute, Executor};
use tokio::sync::{Mutex, OwnedMutexGuard};

use super::bells::{Bell, Bells};

/// How long a statement waits for a connection before it fails.
const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(10);

/// The database: `&Pool` runs a query (`query.execute(&pool)`), and
/// [`Pool::acquire`] lends a connection for a transaction.
#[derive(Clone)]
pub struct Pool {
    shared: Shared,
    /// Wake-ups for what waits on others' writes (`super::bells`).
    bells: Arc<Bells>,
    /// PostgreSQL's address, for the listener the bells open when first
    /// needed; `None` on SQLite.
    listen_url: Option<Arc<str>>,
}

#[derive(Clone)]
enum Shared {
    Pooled(AnyPool),
    Single(Arc<Mutex<AnyConnection>>),
}

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self.shared {
            Shared::Pooled(_) => "Pool(PostgreSQL)",
            Shared::Single(_) => "Pool(SQLite)",
        })
    }
}

/// A connection lent by [`Pool::acquire`], given back when dropped.
pub enum Conn {
    Pooled(PoolConnection<Any>),
    Single(OwnedMutexGuard<AnyConnection>),
}

impl Deref for Conn {
    type Target = AnyConnection;
    fn deref(&self) -> &AnyConnection {
        match self {
            Conn::Pooled(conn) => conn,
            Conn::Single(conn) => conn,
        }
    }
}

impl DerefMut for Conn {
    fn deref_mut(&mut self) -> &mut AnyConnection {
        match self {
            Conn::Pooled(conn) => conn,
            Conn::Single(conn) => conn,
        }
    }
}

impl Conn {
    /// A transaction that writes. On SQLite it takes the write lock as it
    /// begins (`BEGIN IMMEDIATE`, which waits out the busy timeout): a
    /// deferred one that reads and then writes fails at once (`SQLITE_BUSY`,
    /// no waiting) when another connection — another replica on the same
    /// file — committed in between.
    pub async fn begin_write(&mut self) -> Result<sqlx::Transaction<'_, Any>, sqlx::Error> {
        match self {
            Conn::Pooled(conn) => Connection::begin(&mut **conn).await,
            Conn::Single(conn) => Connection::begin_with(&mut **conn, "BEGIN IMMEDIATE").await,
        }
    }
}

impl Pool {
    /// A connection of its own until dropped (`conn.begin_write()` starts a
    /// transaction on it). Nothing else may use `self` meanwhile on SQLite:
    /// statements of a transaction run on the transaction.
    pub async fn acquire(&self) -> Result<Conn, sqlx::Error> {
        match &self.shared {
            Shared::Pooled(pool) => Ok(Conn::Pooled(pool.acquire().await?)),
            Shared::Single(conn) => tokio::time::timeout(ACQUIRE_TIMEOUT, conn.clone().lock_owned())
                .await
                .map(Conn::Single)
                .map_err(|_| sqlx::Error::PoolTimedOut),
        }
    }

    /// Writes that go together, in one call to the database and one
    /// commit (issue #47: each call is a round trip to SQLite's thread,
    /// each commit a write of its log). Choose `query`'s text with
    /// [`Pool::is_postgres`], both numbering their parameters alike: on
    /// PostgreSQL one statement, whose data-modifying `WITH`s make it
    /// atomic; on SQLite, which has no data-modifying `WITH`, several
    /// statements between `BEGIN IMMEDIATE` and `COMMIT` in one string. If
    /// one of them fails, or the caller goes away before they end, what
    /// they began is rolled back before anyone else may use the connection.
    /// Returns the rows its statements return (`RETURNING`).
    pub async fn write_together<'q>(
        &self,
        query: sqlx::query::Query<'q, Any, sqlx::any::AnyArguments<'q>>,
    ) -> Result<Vec<AnyRow>, sqlx::Error> {
        let mut conn = self.acquire().await?;
        if let Conn::Pooled(_) = conn {
            return conn.fetch_all(query).await;
        }
        let mut open = Unfinished(Some(conn));
        let result = open.0.as_mut().expect("the connection is held").fetch_all(query).await;
        let mut conn = open.0.take().expect("the connection is held");
        if result.is_err() {
            // Refused when the failure came before `BEGIN` took: nothing to undo.
            let _ = conn.execute("ROLLBACK").await;
        }
        result
    }

    /// Whether this is PostgreSQL (else SQLite).
    pub fn is_postgres(&self) -> bool {
        matches!(self.shared, Shared::Pooled(_))
    }

    /// A bell for `topic` (a turn's id): it rings when a writer of this or
    /// another replica calls [`Pool::ring`] for it (see `super::bells`).
    pub fn bell(&self, topic: &str) -> Bell {
        if self.bells.start_watching() {
            let bells = self.bells.clone();
            match &self.listen_url {
                Some(url) => drop(tokio::spawn(bells.listen_postgres(url.to_string()))),
                None => drop(tokio::spawn(watch_sqlite(bells, self.clone()))),
            }
        }
        self.bells.subscribe(topic)
    }

    /// Wakes this process's waiters on `topic`, after a write committed
    /// (other replicas hear it by the write's own `NOTIFY` on PostgreSQL,
    /// by SQLite's data version there).
    pub fn ring(&self, topic: &str) {
        self.bells.ring(topic);
    }

    /// The wake-ups of this pool's process.
    pub fn bells(&self) -> &Bells {
        &self.bells
    }
}

impl<'p> Executor<'p> for &'_ Pool {
    type Database = Any;

    /// The rows are gathered before the connection is given back: no query
    /// here returns more than a page of them.
    fn fetch_many<'e, 'q: 'e, E>(self, query: E) -> BoxStream<'e, Result<Either<AnyQueryResult, AnyRow>, sqlx::Error>>
    where
        'p: 'e,
        E: 'q + Execute<'q, Any>,
    {
        let pool = self.clone();
        futures::stream::once(async move {
            let mut conn = pool.acquire().await?;
            conn.fetch_many(query).try_collect::<Vec<_>>().await
        })
        .map_ok(|rows| futures::stream::iter(rows.into_iter().map(Ok)))
        .try_flatten()
        .boxed()
    }

    fn fetch_optional<'e, 'q: 'e, E>(self, query: E) -> BoxFuture<'e, Result<Option<AnyRow>, sqlx::Error>>
    where
        'p: 'e,
        E: 'q + Execute<'q, Any>,
    {
        let pool = self.clone();
        Box::pin(async move { pool.acquire().await?.fetch_optional(query).await })
    }

    fn prepare_with<'e, 'q: 'e>(
        self,
        sql: &'q str,
        parameters: &'e [AnyTypeInfo],
    ) -> BoxFuture<'e, Result<AnyStatement<'q>, sqlx::Error>>
    where
        'p: 'e,
    {
        let pool = self.clone();
        Box::pin(async move { pool.acquire().await?.prepare_with(sql, parameters).await })
    }

    fn describe<'e, 'q: 'e>(self, sql: &'q str) -> BoxFuture<'e, Result<Describe<Any>, sqlx::Error>>
    where
        'p: 'e,
    {
        let pool = self.clone();
        Box::pin(async move { pool.acquire().await?.describe(sql).await })
    }
}

/// SQLite's connection while statements sent by [`Pool::write_together`]
/// may have begun a transaction they did not end: dropped so (its caller
/// gone mid-way), the connection goes to a task that rolls the
/// transaction back, holding the lock until it has.
struct Unfinished(Option<Conn>);

impl Drop for Unfinished {
    fn drop(&mut self) {
        if let Some(mut conn) = self.0.take()
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            runtime.spawn(async move {
                let _ = conn.execute("ROLLBACK").await;
            });
        }
    }
}

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

/// Opens the database and applies the migrations.
pub async fn connect(url: &str) -> anyhow::Result<Pool> {
    install_default_drivers();
    if !url.starts_with("sqlite:") {
        let pool = AnyPoolOptions::new()
            .max_connections(16)
            .acquire_timeout(ACQUIRE_TIMEOUT)
            .connect(url)
            .await
            .context("cannot open the database named by DATABASE_URL")?;
        MIGRATOR.run(&pool).await.context("cannot apply the database migrations")?;
        return Ok(Pool { shared: Shared::Pooled(pool), bells: Arc::default(), listen_url: Some(url.into()) });
    }
    let mut conn = AnyConnection::connect(url).await.context("cannot open the database named by DATABASE_URL")?;
    // WAL with synchronous = NORMAL: a commit survives a crash of the
    // process without waiting for an fsync (power loss may drop the last few).
    // No checkpoint inside a commit: `checkpoint_in_background` does them.
    conn.execute(
        "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA busy_timeout = 5000; \
         PRAGMA foreign_keys = ON; PRAGMA wal_autocheckpoint = 0;",
    )
    .await
    .context("cannot set up the SQLite database")?;
    MIGRATOR.run(&mut conn).await.context("cannot apply the database migrations")?;
    checkpoint_in_background(url).await?;
    Ok(Pool { shared: Shared::Single(Arc::new(Mutex::new(conn))), bells: Arc::default(), listen_url: None })
}

/// How often SQLite's data version is read while anything waits.
const SQLITE_LOOK_EVERY: Duration = Duration::from_millis(250);

/// Hears other processes' commits to the SQLite file for `bells`: while
/// anything waits, reads `PRAGMA data_version` (it moves when another
/// connection committed) and rings every topic when it moved; rests while
/// nothing waits.
async fn watch_sqlite(bells: Arc<Bells>, pool: Pool) {
    let mut seen: Option<i64> = None;
    loop {
        if !bells.anyone_waiting() {
            seen = None;
            bells.someone_waits().await;
            continue;
        }
        tokio::time::sleep(SQLITE_LOOK_EVERY).await;
        match sqlx::query_scalar::<_, i64>("PRAGMA data_version").fetch_one(&pool).await {
            Ok(version) => {
                if seen.is_some_and(|seen| seen != version) {
                    bells.ring_all();
                }
                seen = Some(version);
            }
            Err(error) => tracing::warn!(%error, "cannot read SQLite's data version"),
        }
    }
}

/// How often SQLite's write-ahead log is copied back into the database.
const CHECKPOINT_EVERY: Duration = Duration::from_millis(500);

/// SQLite would otherwise checkpoint inside whichever commit crosses 1000
/// pages of log — a multi-millisecond stall in the middle of a turn. A
/// connection of its own checkpoints instead, `PASSIVE` (never blocking the
/// writer), twice a second, until the process ends.
async fn checkpoint_in_background(url: &str) -> anyhow::Result<()> {
    let mut conn = AnyConnection::connect(url).await.context("cannot open the checkpoint connection")?;
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
