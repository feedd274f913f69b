//! The database handle over SQLite or PostgreSQL (sqlx `Any`), the
//! migrations, and whether the database is ready to serve.
//!
//! PostgreSQL is a pool of connections. SQLite is one connection behind a
//! fair lock: it has one writer, and sqlx's pool would add two round trips
//! to SQLite's thread per statement (a check of the connection before and
//! after each use) and a task per release — most of a turn's system time.

use std::ops::{Deref, DerefMut};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use anyhow::Context;
use futures::future::BoxFuture;
use futures::stream::BoxStream;
use futures::{StreamExt, TryStreamExt};
use sqlx::any::{
    AnyArguments, AnyPoolOptions, AnyQueryResult, AnyRow, AnyStatement, AnyTypeInfo, install_default_drivers,
};
use sqlx::pool::PoolConnection;
use sqlx::{Any, AnyConnection, AnyPool, Connection, Describe, Either, Execute, Executor};
use sqlx_core::any::{AnyArgumentBuffer, AnyValueKind};
use tokio::sync::{Mutex, OwnedMutexGuard, mpsc, oneshot};

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
    /// SQLite's queue of [`Pool::write_together`]'s writes, run by
    /// [`write_in_batches`]; `None` on PostgreSQL.
    writes: Option<mpsc::UnboundedSender<Write>>,
    /// The transactions SQLite's writes committed (the tests read it).
    commits: Arc<AtomicU64>,
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
    /// statements in one string, which this runs in one transaction —
    /// with other callers' writes that wait at the same time, in one
    /// commit (see [`write_in_batches`]); the caller's statements still
    /// take effect all or none, also when the caller goes away before
    /// they end. Returns the rows its statements return (`RETURNING`).
    pub async fn write_together<'q>(
        &self,
        mut query: sqlx::query::Query<'q, Any, sqlx::any::AnyArguments<'q>>,
    ) -> Result<Vec<AnyRow>, sqlx::Error> {
        let (Some(writes), Shared::Single(conn)) = (&self.writes, &self.shared) else {
            return self.acquire().await?.fetch_all(query).await;
        };
        let sql = Execute::sql(&query).trim().trim_end_matches(';');
        let arguments = query.take_arguments().map_err(sqlx::Error::Encode)?.unwrap_or_default();
        if let Ok(free) = conn.clone().try_lock_owned() {
            // Nobody holds the connection or waits for it, so no write
            // waits to go with this one: it goes at once, from here (the
            // writer's task would be one more hand-off each way).
            return self.write_here(free, sql, arguments).await;
        }
        let (sql, arguments) = (sql.to_owned(), owned(arguments)?);
        let (reply, answer) = oneshot::channel();
        if let Err(mpsc::error::SendError(write)) = writes.send(Write { sql, arguments, reply }) {
            // The writer's task is gone (the runtime that opened the
            // database ended): the write waits its turn here instead.
            let held = tokio::time::timeout(ACQUIRE_TIMEOUT, conn.clone().lock_owned())
                .await
                .map_err(|_| sqlx::Error::PoolTimedOut)?;
            return self.write_here(held, &write.sql, write.arguments).await;
        }
        answer.await.map_err(|_| sqlx::Error::PoolClosed)?
    }

    /// One write on SQLite's connection, held, from the caller's task, its
    /// transaction around it; rolled back if the caller goes away mid-way.
    async fn write_here(
        &self,
        held: OwnedMutexGuard<AnyConnection>,
        sql: &str,
        arguments: AnyArguments<'_>,
    ) -> Result<Vec<AnyRow>, sqlx::Error> {
        let mut open = Unfinished(Some(Conn::Single(held)));
        let conn = open.0.as_mut().expect("the connection is held");
        let result = Writer { conn, commits: &self.commits }.alone(sql, arguments).await;
        open.0 = None;
        result
    }

    /// Closes PostgreSQL's connections and waits until they are closed
    /// (nothing on SQLite, whose one connection closes when dropped).
    pub async fn close(&self) {
        if let Shared::Pooled(pool) = &self.shared {
            pool.close().await;
        }
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

/// A write of [`Pool::write_together`] on SQLite: its statements without
/// a transaction around them, and who waits for their rows.
struct Write {
    sql: String,
    arguments: AnyArguments<'static>,
    reply: oneshot::Sender<Result<Vec<AnyRow>, sqlx::Error>>,
}

/// The most writes one commit takes.
const MOST_IN_ONE_COMMIT: usize = 32;

/// Runs SQLite's writes in as few commits as they allow (issue #47): the
/// writes that wait while the connection is busy go together in the next
/// transaction, each in a savepoint of its own — one that fails is undone
/// alone, and its caller hears why — and one commit answers them all.
/// With ten turns at a time a commit serves several, and SQLite writes
/// the pages they share to its log and takes its locks once, not once a
/// write. A write alone goes as one call, its transaction around it, as
/// before. When the transaction itself fails (the commit, or an error
/// that ends the transaction), nothing of it stays and each of its writes
/// is run again alone: its caller hears its own outcome, never another's.
///
/// A task of its own, so a caller that goes away mid-write cannot leave
/// the others' writes half done.
async fn write_in_batches(
    conn: Arc<Mutex<AnyConnection>>,
    mut queue: mpsc::UnboundedReceiver<Write>,
    commits: Arc<AtomicU64>,
) {
    while let Some(first) = queue.recv().await {
        let Ok(guard) = tokio::time::timeout(ACQUIRE_TIMEOUT, conn.clone().lock_owned()).await else {
            let _ = first.reply.send(Err(sqlx::Error::PoolTimedOut));
            continue;
        };
        let mut batch = vec![first];
        while batch.len() < MOST_IN_ONE_COMMIT
            && let Ok(write) = queue.try_recv()
        {
            batch.push(write);
        }
        let mut open = Unfinished(Some(Conn::Single(guard)));
        let mut writer = Writer { conn: open.0.as_mut().expect("the connection is held"), commits: &commits };
        writer.commit_together(batch).await;
        open.0 = None;
    }
}

/// The writer's task's hold on SQLite's connection during a batch.
struct Writer<'c> {
    conn: &'c mut AnyConnection,
    commits: &'c AtomicU64,
}

impl Writer<'_> {
    /// One transaction for `batch` (see [`write_in_batches`]), in as many
    /// calls as it has writes: the first begins it, the last commits it.
    async fn commit_together(&mut self, mut batch: Vec<Write>) {
        if batch.len() == 1 {
            let write = batch.pop().expect("one write");
            let outcome = self.alone(&write.sql, write.arguments).await;
            let _ = write.reply.send(outcome);
            return;
        }
        let last = batch.len() - 1;
        let mut done = Vec::with_capacity(batch.len());
        let mut committed = false;
        let mut waiting = batch.into_iter().enumerate();
        while let Some((i, write)) = waiting.next() {
            let begin = if i == 0 { "BEGIN IMMEDIATE; " } else { "" };
            let commit = if i == last { "; COMMIT" } else { "" };
            let sql = format!("{begin}SAVEPOINT write; {}; RELEASE write{commit}", write.sql);
            match self.conn.fetch_all(sqlx::query_with(&sql, copied(&write.arguments))).await {
                Ok(rows) => {
                    done.push((write, rows));
                    committed = i == last;
                }
                // The write failed inside its savepoint: undone alone.
                Err(error) if self.conn.execute("ROLLBACK TO write; RELEASE write").await.is_ok() => {
                    let _ = write.reply.send(Err(error));
                }
                // No savepoint to go back to: the transaction did not
                // begin, or ended (the error ended it, or the commit
                // failed). Nothing of it stays.
                Err(_) => {
                    let _ = self.conn.execute("ROLLBACK").await;
                    let again = done.into_iter().map(|(write, _)| write).chain([write]);
                    return self.each_alone(again.chain(waiting.map(|(_, write)| write)).collect()).await;
                }
            }
        }
        if !committed {
            // The last write failed alone: the others are still to commit.
            let ended = if done.is_empty() { "ROLLBACK" } else { "COMMIT" };
            if self.conn.execute(ended).await.is_err() {
                let _ = self.conn.execute("ROLLBACK").await;
                return self.each_alone(done.into_iter().map(|(write, _)| write).collect()).await;
            }
            if done.is_empty() {
                return;
            }
        }
        self.committed(done.len());
        for (write, rows) in done {
            let _ = write.reply.send(Ok(rows));
        }
    }

    /// Runs each write in a transaction of its own.
    async fn each_alone(&mut self, writes: Vec<Write>) {
        for write in writes {
            let outcome = self.alone(&write.sql, write.arguments).await;
            let _ = write.reply.send(outcome);
        }
    }

    /// One write, its transaction around it, in one call.
    async fn alone(&mut self, sql: &str, arguments: AnyArguments<'_>) -> Result<Vec<AnyRow>, sqlx::Error> {
        let sql = format!("BEGIN IMMEDIATE; {sql}; COMMIT");
        let result = self.conn.fetch_all(sqlx::query_with(&sql, arguments)).await;
        match result {
            Ok(_) => self.committed(1),
            // Refused when the failure came before `BEGIN` took: nothing to undo.
            Err(_) => drop(self.conn.execute("ROLLBACK").await),
        }
        result
    }

    fn committed(&self, writes: usize) {
        self.commits.fetch_add(1, Ordering::Relaxed);
        crate::metrics::sqlite_commit(writes);
    }
}

/// `arguments` with what they borrow copied, for the writer's task.
/// sqlx gives no owned form of them; their values are its core's (hidden
/// but public) `AnyValueKind`s, read here at the version `Cargo.toml` pins.
fn owned(arguments: AnyArguments<'_>) -> Result<AnyArguments<'static>, sqlx::Error> {
    use std::borrow::Cow;
    let values = arguments
        .values
        .0
        .into_iter()
        .map(|value| match value {
            AnyValueKind::Null(kind) => Ok(AnyValueKind::Null(kind)),
            AnyValueKind::Bool(v) => Ok(AnyValueKind::Bool(v)),
            AnyValueKind::SmallInt(v) => Ok(AnyValueKind::SmallInt(v)),
            AnyValueKind::Integer(v) => Ok(AnyValueKind::Integer(v)),
            AnyValueKind::BigInt(v) => Ok(AnyValueKind::BigInt(v)),
            AnyValueKind::Real(v) => Ok(AnyValueKind::Real(v)),
            AnyValueKind::Double(v) => Ok(AnyValueKind::Double(v)),
            AnyValueKind::Text(v) => Ok(AnyValueKind::Text(Cow::Owned(v.into_owned()))),
            AnyValueKind::Blob(v) => Ok(AnyValueKind::Blob(Cow::Owned(v.into_owned()))),
            other => Err(sqlx::Error::Encode(format!("a value this build cannot copy: {other:?}").into())),
        })
        .collect::<Result<_, _>>()?;
    Ok(AnyArguments { values: AnyArgumentBuffer(values) })
}

/// A copy of `arguments`, kept to run a write again alone.
fn copied(arguments: &AnyArguments<'static>) -> AnyArguments<'static> {
    AnyArguments { values: AnyArgumentBuffer(arguments.values.0.clone()) }
}

/// SQLite's connection while a transaction may be open on it: dropped so
/// (a write's caller gone mid-way, or the writer's task ended as its
/// runtime shuts down), the
/// connection goes to a task that rolls the transaction back, holding the
/// lock until it has.
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
        return Ok(Pool {
            shared: Shared::Pooled(pool),
            bells: Arc::default(),
            listen_url: Some(url.into()),
            writes: None,
            commits: Arc::default(),
        });
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
    let conn = Arc::new(Mutex::new(conn));
    let (writes, queue) = mpsc::unbounded_channel();
    let commits = Arc::new(AtomicU64::new(0));
    tokio::spawn(write_in_batches(conn.clone(), queue, commits.clone()));
    Ok(Pool { shared: Shared::Single(conn), bells: Arc::default(), listen_url: None, writes: Some(writes), commits })
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

#[cfg(test)]
mod tests {
    use super::*;

    impl Pool {
        /// The transactions SQLite's writer committed.
        fn commits(&self) -> u64 {
            self.commits.load(Ordering::Relaxed)
        }
    }

    /// A SQLite database of its own, with a table the tests write.
    async fn sqlite() -> (tempfile::TempDir, Pool) {
        let dir = tempfile::tempdir().unwrap();
        let pool = connect(&format!("sqlite://{}?mode=rwc", dir.path().join("t.db").display())).await.unwrap();
        sqlx::query(
            "CREATE TABLE parents (id TEXT PRIMARY KEY);
             CREATE TABLE notes (id TEXT PRIMARY KEY, body TEXT NOT NULL,
                                 parent TEXT REFERENCES parents (id) DEFERRABLE INITIALLY DEFERRED);
             INSERT INTO parents (id) VALUES ('p')",
        )
        .execute(&pool)
        .await
        .unwrap();
        (dir, pool)
    }

    /// Writes `sqls` at once while the connection is lent to the test, so
    /// the writer finds them all waiting when it is given back: one
    /// transaction takes them. Their outcomes, in order.
    async fn at_once(pool: &Pool, sqls: Vec<String>) -> Vec<Result<Vec<String>, sqlx::Error>> {
        let lent = pool.acquire().await.unwrap();
        let writes: Vec<_> = sqls
            .into_iter()
            .enumerate()
            .map(|(i, sql)| {
                let pool = pool.clone();
                tokio::spawn(async move {
                    let text = format!("note {i}");
                    let rows = pool.write_together(sqlx::query(&sql).bind(format!("n{i}")).bind(text.as_str())).await?;
                    Ok(rows.iter().map(|row| sqlx::Row::get::<String, _>(row, 0)).collect())
                })
            })
            .collect();
        settle().await;
        drop(lent);
        let mut outcomes = Vec::new();
        for write in writes {
            outcomes.push(write.await.unwrap());
        }
        outcomes
    }

    /// Lets the tasks spawned so far run to their first wait. One thread
    /// (`tokio::test`'s runtime): each yield puts this task behind them,
    /// and a write is queued at its first poll.
    async fn settle() {
        for _ in 0..3 {
            tokio::task::yield_now().await;
        }
    }

    /// Writes note `id` from a task of its own, queued once this returns
    /// (while the test holds the connection).
    async fn queued(pool: &Pool, id: &'static str) -> tokio::task::JoinHandle<Result<Vec<AnyRow>, sqlx::Error>> {
        let pool = pool.clone();
        let write = tokio::spawn(async move { pool.write_together(sqlx::query(NOTE).bind(id).bind("x")).await });
        settle().await;
        write
    }

    async fn notes(pool: &Pool) -> Vec<String> {
        sqlx::query_scalar("SELECT id FROM notes ORDER BY id").fetch_all(pool).await.unwrap()
    }

    const NOTE: &str = "INSERT INTO notes (id, body) VALUES ($1, $2) RETURNING id";

    #[tokio::test]
    async fn writes_that_wait_together_are_committed_together_and_one_that_fails_is_undone_alone() {
        // The failing write first (its call begins the transaction), in
        // the middle, and last (its call would commit it).
        for failing in [0, 2, 5] {
            let (_dir, pool) = sqlite().await;
            let mut sqls = vec![NOTE.to_string(); 6];
            // Its first statement succeeds, its second breaks a constraint.
            sqls[failing] = format!("INSERT INTO notes (id, body) VALUES ($1 || '-first', $2); {NOTE}; {NOTE}");
            let before = pool.commits();
            let outcomes = at_once(&pool, sqls).await;
            assert_eq!(pool.commits() - before, 1, "one commit took the six writes ({failing} failing)");
            for (i, outcome) in outcomes.iter().enumerate() {
                if i == failing {
                    let error = outcome.as_ref().expect_err("a duplicate id fails");
                    assert!(error.to_string().contains("UNIQUE"), "{error}");
                } else {
                    let ids = outcome.as_ref().expect("the others are written");
                    assert_eq!(ids, &[format!("n{i}")], "its RETURNING row and no other write's");
                }
            }
            let others: Vec<String> = (0..6).filter(|i| *i != failing).map(|i| format!("n{i}")).collect();
            assert_eq!(notes(&pool).await, others, "the failed write left nothing");
            // The connection is usable again, outside any transaction.
            pool.write_together(sqlx::query(NOTE).bind("later").bind("x")).await.unwrap();
            assert_eq!(notes(&pool).await.len(), 6);
        }
    }

    #[tokio::test]
    async fn a_commit_that_fails_runs_each_write_again_alone() {
        let (_dir, pool) = sqlite().await;
        let mut sqls = vec![NOTE.to_string(); 4];
        // A deferred foreign key: refused at the commit, not at the statement.
        sqls[1] = "INSERT INTO notes (id, body, parent) VALUES ($1, $2, 'nobody') RETURNING id".into();
        let before = pool.commits();
        let outcomes = at_once(&pool, sqls).await;
        assert_eq!(pool.commits() - before, 3, "the three that could be written, one by one");
        assert!(outcomes[1].as_ref().expect_err("refused at its commit").to_string().contains("FOREIGN KEY"));
        for i in [0, 2, 3] {
            assert_eq!(outcomes[i].as_ref().unwrap(), &[format!("n{i}")], "write {i} committed");
        }
        assert_eq!(notes(&pool).await, ["n0", "n2", "n3"]);
    }

    #[tokio::test]
    async fn a_write_whose_failure_ends_the_transaction_loses_no_other_write() {
        let (_dir, pool) = sqlite().await;
        let mut sqls = vec![NOTE.to_string(); 5];
        // Undoes the whole transaction, then fails: what the writes before
        // it wrote is gone, and they are written again, once.
        sqls[2] = "RELEASE write; ROLLBACK; SELECT $1, $2 FROM nowhere".into();
        let outcomes = at_once(&pool, sqls).await;
        assert!(outcomes[2].is_err());
        for i in [0, 1, 3, 4] {
            assert_eq!(outcomes[i].as_ref().unwrap(), &[format!("n{i}")], "write {i} committed");
        }
        assert_eq!(notes(&pool).await, ["n0", "n1", "n3", "n4"]);
    }

    #[tokio::test]
    async fn a_write_that_finds_the_connection_free_goes_at_once_all_or_nothing() {
        let (_dir, pool) = sqlite().await;
        let before = pool.commits();
        let ids = pool.write_together(sqlx::query(NOTE).bind("a").bind("x")).await.unwrap();
        assert_eq!(ids.len(), 1);
        let twice = format!("INSERT INTO notes (id, body) VALUES ('b', $2); {NOTE}");
        let Err(error) = pool.write_together(sqlx::query(&twice).bind("a").bind("x")).await else {
            panic!("a duplicate id fails");
        };
        assert!(error.to_string().contains("UNIQUE"), "{error}");
        assert_eq!(pool.commits() - before, 1);
        assert_eq!(notes(&pool).await, ["a"], "the failed write's first statement undone");
    }

    #[test]
    fn a_pool_that_outlives_the_runtime_that_opened_it_still_writes() {
        let runtime = || tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let (dir, pool) = runtime().block_on(sqlite());
        // The writer's task ended with its runtime.
        runtime().block_on(async {
            let lent = pool.acquire().await.unwrap();
            let write = queued(&pool, "late").await;
            drop(lent);
            write.await.unwrap().expect("written from the caller's task");
            assert_eq!(notes(&pool).await, ["late"]);
        });
        drop(dir);
    }

    #[tokio::test]
    async fn a_write_goes_on_when_its_caller_goes_away() {
        let (_dir, pool) = sqlite().await;
        let lent = pool.acquire().await.unwrap();
        // The write queued, and the writer waits for the connection.
        let write = queued(&pool, "gone").await;
        write.abort();
        drop(lent);
        // The writer runs it, then the next one (which finds the writer
        // holding the connection and queues behind it).
        pool.write_together(sqlx::query(NOTE).bind("next").bind("x")).await.unwrap();
        let written: Vec<String> =
            sqlx::query_scalar("SELECT id FROM notes ORDER BY rowid").fetch_all(&pool).await.unwrap();
        assert_eq!(written, ["gone", "next"]);
    }
}
