//! Knowledge sources, their pages and chunks, and the content gaps
//! (issue #45). A sync owns its source through a lease (one replica at a
//! time, taken over when it lapses); every change to a workspace's chunks
//! moves its `knowledge_revision`, which tells each replica's index to
//! rebuild.

use sqlx::FromRow;

use super::pool::Pool;
use crate::ids::new_id;

/// A source as kept.
#[derive(Debug, Clone, FromRow)]
pub struct SourceRow {
    pub id: String,
    pub workspace_id: String,
    pub kind: String,
    pub name: String,
    pub config: String,
    pub language: Option<String>,
    pub refresh_hours: i64,
    pub status: String,
    pub error: Option<String>,
    pub pages: i64,
    pub chunks: i64,
    pub created_at: i64,
    pub last_synced_at: Option<i64>,
    pub next_sync_at: Option<i64>,
    pub sync_due: i64,
    pub generation: i64,
    /// Pages whose last fetch failed.
    pub failed_pages: i64,
}

const SOURCE_COLUMNS: &str = "id, workspace_id, kind, name, config, language, refresh_hours, status, error, pages,
    chunks, created_at, last_synced_at, next_sync_at, sync_due, generation,
    (SELECT COUNT(*) FROM knowledge_pages p WHERE p.source_id = knowledge_sources.id AND p.status = 'error')
      AS failed_pages";

/// A source to add.
pub struct NewSource<'a> {
    pub workspace_id: &'a str,
    pub kind: &'a str,
    pub name: &'a str,
    pub config: &'a serde_json::Value,
    pub language: Option<&'a str>,
    pub refresh_hours: i64,
}

/// Adds a source, due for its first sync at once.
pub async fn insert_source(pool: &Pool, source: NewSource<'_>, now: i64) -> anyhow::Result<String> {
    let id = new_id("ks");
    sqlx::query(
        "INSERT INTO knowledge_sources (id, workspace_id, kind, name, config, language, refresh_hours, status,
           created_at, sync_due)
         VALUES ($1, $2, $3, $4, $5, $6, $7, 'pending', $8, 1)",
    )
    .bind(&id)
    .bind(source.workspace_id)
    .bind(source.kind)
    .bind(source.name)
    .bind(source.config.to_string())
    .bind(source.language)
    .bind(source.refresh_hours)
    .bind(now)
    .execute(pool)
    .await?;
    Ok(id)
}

pub async fn sources(pool: &Pool, workspace_id: &str) -> anyhow::Result<Vec<SourceRow>> {
    Ok(sqlx::query_as(&format!(
        "SELECT {SOURCE_COLUMNS} FROM knowledge_sources WHERE workspace_id = $1 ORDER BY created_at, id"
    ))
    .bind(workspace_id)
    .fetch_all(pool)
    .await?)
}

pub async fn source(pool: &Pool, workspace_id: &str, id: &str) -> anyhow::Result<Option<SourceRow>> {
    Ok(sqlx::query_as(&format!("SELECT {SOURCE_COLUMNS} FROM knowledge_sources WHERE id = $1 AND workspace_id = $2"))
        .bind(id)
        .bind(workspace_id)
        .fetch_optional(pool)
        .await?)
}

/// Asks for a sync now (after the one running, if one is: `sync_due` 2
/// survives its end as 1); false when there is no such source.
pub async fn request_sync(pool: &Pool, workspace_id: &str, id: &str) -> anyhow::Result<bool> {
    let done = sqlx::query(
        "UPDATE knowledge_sources SET sync_due = CASE WHEN lease_owner IS NULL THEN 1 ELSE 2 END
         WHERE id = $1 AND workspace_id = $2",
    )
    .bind(id)
    .bind(workspace_id)
    .execute(pool)
    .await?;
    Ok(done.rows_affected() > 0)
}

/// Asks for a sync now of every source of the workspace (as
/// [`request_sync`]); how many there are.
pub async fn request_sync_all(pool: &Pool, workspace_id: &str) -> anyhow::Result<u64> {
    let done = sqlx::query(
        "UPDATE knowledge_sources SET sync_due = CASE WHEN lease_owner IS NULL THEN 1 ELSE 2 END
         WHERE workspace_id = $1",
    )
    .bind(workspace_id)
    .execute(pool)
    .await?;
    Ok(done.rows_affected())
}

/// Removes a source and everything read from it; false when there is none.
pub async fn delete_source(pool: &Pool, workspace_id: &str, id: &str) -> anyhow::Result<bool> {
    let mut conn = pool.acquire().await?;
    let mut tx = conn.begin_write().await?;
    sqlx::query("DELETE FROM knowledge_chunks WHERE source_id = $1 AND workspace_id = $2")
        .bind(id)
        .bind(workspace_id)
        .execute(&mut *tx)
        .await?;
    sqlx::query("DELETE FROM knowledge_pages WHERE source_id = $1 AND workspace_id = $2")
        .bind(id)
        .bind(workspace_id)
        .execute(&mut *tx)
        .await?;
    let gone = sqlx::query("DELETE FROM knowledge_sources WHERE id = $1 AND workspace_id = $2")
        .bind(id)
        .bind(workspace_id)
        .execute(&mut *tx)
        .await?
        .rows_affected();
    bump_revision_in(&mut tx, workspace_id).await?;
    tx.commit().await?;
    Ok(gone > 0)
}

/// A source claimed for a sync.
#[derive(Debug, Clone, FromRow)]
pub struct Claimed {
    pub id: String,
    pub workspace_id: String,
    pub kind: String,
    pub config: String,
    pub language: Option<String>,
    pub refresh_hours: i64,
    pub generation: i64,
}

/// Claims one source due for a sync whose lease has lapsed (none held,
/// or its replica stopped renewing it), for `owner` until `until`.
pub async fn claim_due(pool: &Pool, owner: &str, now: i64, until: i64) -> anyhow::Result<Option<Claimed>> {
    let candidate: Option<(String,)> = sqlx::query_as(
        "SELECT id FROM knowledge_sources
         WHERE (sync_due > 0 OR (next_sync_at IS NOT NULL AND next_sync_at <= $1)) AND lease_until < $1
         ORDER BY sync_due DESC, COALESCE(next_sync_at, 0), id LIMIT 1",
    )
    .bind(now)
    .fetch_optional(pool)
    .await?;
    let Some((id,)) = candidate else { return Ok(None) };
    // The lease is taken only if nobody took it since (the condition is
    // checked again on the row as it is updated).
    Ok(sqlx::query_as(
        "UPDATE knowledge_sources SET lease_owner = $1, lease_until = $2, status = 'syncing',
           generation = generation + 1, sync_due = 1
         WHERE id = $3 AND lease_until < $4
         RETURNING id, workspace_id, kind, config, language, refresh_hours, generation",
    )
    .bind(owner)
    .bind(until)
    .bind(&id)
    .bind(now)
    .fetch_optional(pool)
    .await?)
}

/// Keeps the lease while the sync runs; false when it was lost (the
/// source was removed, or another replica took it over).
pub async fn renew_lease(pool: &Pool, id: &str, owner: &str, until: i64) -> anyhow::Result<bool> {
    let done = sqlx::query("UPDATE knowledge_sources SET lease_until = $1 WHERE id = $2 AND lease_owner = $3")
        .bind(until)
        .bind(id)
        .bind(owner)
        .execute(pool)
        .await?;
    Ok(done.rows_affected() > 0)
}

/// How a sync ended.
pub struct SyncEnd<'a> {
    /// `ready` or `failed`.
    pub status: &'a str,
    pub error: Option<&'a str>,
    pub next_sync_at: Option<i64>,
    /// Whether it ran to the end (a failed one keeps `last_synced_at`).
    pub completed: bool,
}

/// Ends a sync: the counts, the schedule, the lease given back, and the
/// workspace's revision moved in the same transaction (a source is never
/// seen `ready` before its pages are searched).
pub async fn finish_sync(
    pool: &Pool,
    workspace_id: &str,
    id: &str,
    owner: &str,
    end: SyncEnd<'_>,
    now: i64,
) -> anyhow::Result<()> {
    let mut conn = pool.acquire().await?;
    let mut tx = conn.begin_write().await?;
    sqlx::query(
        "UPDATE knowledge_sources SET status = $1, error = $2, next_sync_at = $3,
           sync_due = CASE WHEN sync_due = 2 THEN 1 ELSE 0 END,
           last_synced_at = CASE WHEN $4 = 1 THEN $5 ELSE last_synced_at END,
           pages = (SELECT COUNT(*) FROM knowledge_pages p WHERE p.source_id = $6 AND p.chunks > 0),
           chunks = (SELECT COUNT(*) FROM knowledge_chunks c WHERE c.source_id = $6),
           lease_owner = NULL, lease_until = 0
         WHERE id = $6 AND lease_owner = $7",
    )
    .bind(end.status)
    .bind(end.error)
    .bind(end.next_sync_at)
    .bind(i64::from(end.completed))
    .bind(now)
    .bind(id)
    .bind(owner)
    .execute(&mut *tx)
    .await?;
    bump_revision_in(&mut tx, workspace_id).await?;
    tx.commit().await?;
    Ok(())
}

/// A page as kept.
#[derive(Debug, Clone, FromRow)]
pub struct PageRow {
    pub id: String,
    pub url: String,
    pub title: String,
    pub etag: Option<String>,
    pub last_modified: Option<String>,
    pub content_hash: Option<String>,
    pub bytes: i64,
    pub chunks: i64,
    pub links: Option<String>,
    pub status: String,
    pub error_code: Option<String>,
    pub http_status: Option<i64>,
    pub error: Option<String>,
    pub fetched_at: Option<i64>,
}

const PAGE_COLUMNS: &str = "id, url, title, etag, last_modified, content_hash, bytes, chunks, links, status,
    error_code, http_status, error, fetched_at";

/// A source's pages, failed ones first, then by address.
pub async fn pages(pool: &Pool, source_id: &str) -> anyhow::Result<Vec<PageRow>> {
    Ok(sqlx::query_as(&format!(
        "SELECT {PAGE_COLUMNS} FROM knowledge_pages WHERE source_id = $1
         ORDER BY CASE WHEN status = 'error' THEN 0 ELSE 1 END, url"
    ))
    .bind(source_id)
    .fetch_all(pool)
    .await?)
}

/// One page of a source, by its address.
pub async fn page(pool: &Pool, source_id: &str, url: &str) -> anyhow::Result<Option<PageRow>> {
    Ok(sqlx::query_as(&format!("SELECT {PAGE_COLUMNS} FROM knowledge_pages WHERE source_id = $1 AND url = $2"))
        .bind(source_id)
        .bind(url)
        .fetch_optional(pool)
        .await?)
}

/// A page fetched again and found unchanged: seen by this sync.
pub async fn page_unchanged(pool: &Pool, page_id: &str, generation: i64, now: i64) -> anyhow::Result<()> {
    sqlx::query(
        "UPDATE knowledge_pages SET seen_generation = $1, fetched_at = $2, status = 'ok', error_code = NULL,
           http_status = NULL, error = NULL WHERE id = $3",
    )
    .bind(generation)
    .bind(now)
    .bind(page_id)
    .execute(pool)
    .await?;
    Ok(())
}

/// A chunk to keep.
pub struct NewChunk {
    pub url: String,
    pub section: String,
    pub text: String,
}

/// A page read: its row and its chunks, replacing what was kept of it.
pub struct ReadPage<'a> {
    pub source_id: &'a str,
    pub workspace_id: &'a str,
    pub url: &'a str,
    pub title: &'a str,
    pub language: &'a str,
    pub etag: Option<&'a str>,
    pub last_modified: Option<&'a str>,
    pub content_hash: &'a str,
    pub bytes: i64,
    pub links: Option<String>,
    pub generation: i64,
    pub chunks: Vec<NewChunk>,
}

/// Keeps a page read in full (its chunks replaced in one transaction). The
/// workspace's revision moves when the sync ends (or every so many pages):
/// searches meanwhile keep the index they have instead of rebuilding it at
/// every page.
pub async fn store_page(pool: &Pool, page: ReadPage<'_>, now: i64) -> anyhow::Result<()> {
    let mut conn = pool.acquire().await?;
    let mut tx = conn.begin_write().await?;
    let (page_id, existed) = page_row(&mut tx, page.source_id, page.workspace_id, page.url, page.generation).await?;
    if existed {
        sqlx::query("DELETE FROM knowledge_chunks WHERE page_id = $1").bind(&page_id).execute(&mut *tx).await?;
    }
    sqlx::query(
        "UPDATE knowledge_pages SET title = $1, etag = $2, last_modified = $3, content_hash = $4, bytes = $5,
           chunks = $6, links = $7, status = 'ok', error_code = NULL, http_status = NULL, error = NULL,
           fetched_at = $8, seen_generation = $9 WHERE id = $10",
    )
    .bind(page.title)
    .bind(page.etag)
    .bind(page.last_modified)
    .bind(page.content_hash)
    .bind(page.bytes)
    .bind(page.chunks.len() as i64)
    .bind(&page.links)
    .bind(now)
    .bind(page.generation)
    .bind(&page_id)
    .execute(&mut *tx)
    .await?;
    for (position, chunk) in page.chunks.iter().enumerate() {
        sqlx::query(
            "INSERT INTO knowledge_chunks (id, page_id, source_id, workspace_id, position, url, title, section, text,
               language) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
        )
        .bind(new_id("kc"))
        .bind(&page_id)
        .bind(page.source_id)
        .bind(page.workspace_id)
        .bind(position as i64)
        .bind(&chunk.url)
        .bind(page.title)
        .bind(&chunk.section)
        .bind(&chunk.text)
        .bind(page.language)
        .execute(&mut *tx)
        .await?;
    }
    tx.commit().await?;
    Ok(())
}

/// The id of the source's page at `url`, and whether it was there; a new
/// page's row is made (its status `error` until the caller says more, in
/// the same transaction).
async fn page_row(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    source_id: &str,
    workspace_id: &str,
    url: &str,
    generation: i64,
) -> anyhow::Result<(String, bool)> {
    let existing: Option<(String,)> =
        sqlx::query_as("SELECT id FROM knowledge_pages WHERE source_id = $1 AND url = $2")
            .bind(source_id)
            .bind(url)
            .fetch_optional(&mut **tx)
            .await?;
    if let Some((id,)) = existing {
        return Ok((id, true));
    }
    let id = new_id("kp");
    sqlx::query(
        "INSERT INTO knowledge_pages (id, source_id, workspace_id, url, status, seen_generation)
         VALUES ($1, $2, $3, $4, 'error', $5)",
    )
    .bind(&id)
    .bind(source_id)
    .bind(workspace_id)
    .bind(url)
    .bind(generation)
    .execute(&mut **tx)
    .await?;
    Ok((id, false))
}

/// Why a page was not read this time.
pub struct PageFailure<'a> {
    pub source_id: &'a str,
    pub workspace_id: &'a str,
    pub url: &'a str,
    pub generation: i64,
    pub code: &'a str,
    pub http_status: Option<u16>,
    pub message: &'a str,
    /// The page is gone (404, 410, refused by robots.txt): what was kept
    /// of it is removed. Otherwise (a failure that may pass) it stays.
    pub gone: bool,
}

/// Records a page's failure, seen by this sync.
pub async fn page_failed(pool: &Pool, failure: PageFailure<'_>, now: i64) -> anyhow::Result<()> {
    let mut conn = pool.acquire().await?;
    let mut tx = conn.begin_write().await?;
    let (id, _) = page_row(&mut tx, failure.source_id, failure.workspace_id, failure.url, failure.generation).await?;
    if failure.gone {
        let removed =
            sqlx::query("DELETE FROM knowledge_chunks WHERE page_id = $1").bind(&id).execute(&mut *tx).await?;
        sqlx::query(
            "UPDATE knowledge_pages SET chunks = 0, content_hash = NULL, etag = NULL, last_modified = NULL,
               links = NULL, bytes = 0 WHERE id = $1",
        )
        .bind(&id)
        .execute(&mut *tx)
        .await?;
        if removed.rows_affected() > 0 {
            bump_revision_in(&mut tx, failure.workspace_id).await?;
        }
    }
    sqlx::query(
        "UPDATE knowledge_pages SET status = 'error', error_code = $1, http_status = $2, error = $3, fetched_at = $4,
           seen_generation = $5 WHERE id = $6",
    )
    .bind(failure.code)
    .bind(failure.http_status.map(i64::from))
    .bind(failure.message)
    .bind(now)
    .bind(failure.generation)
    .bind(&id)
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(())
}

/// Removes the pages this sync did not see (gone from the sitemap or no
/// longer linked), with their chunks; answers how many.
pub async fn remove_unseen(pool: &Pool, workspace_id: &str, source_id: &str, generation: i64) -> anyhow::Result<u64> {
    let mut conn = pool.acquire().await?;
    let mut tx = conn.begin_write().await?;
    sqlx::query(
        "DELETE FROM knowledge_chunks WHERE page_id IN
           (SELECT id FROM knowledge_pages WHERE source_id = $1 AND seen_generation < $2)",
    )
    .bind(source_id)
    .bind(generation)
    .execute(&mut *tx)
    .await?;
    let removed = sqlx::query("DELETE FROM knowledge_pages WHERE source_id = $1 AND seen_generation < $2")
        .bind(source_id)
        .bind(generation)
        .execute(&mut *tx)
        .await?
        .rows_affected();
    if removed > 0 {
        bump_revision_in(&mut tx, workspace_id).await?;
    }
    tx.commit().await?;
    Ok(removed)
}

/// Moves the workspace's knowledge revision: every replica's index is
/// rebuilt at its next search.
pub async fn bump_revision(pool: &Pool, workspace_id: &str) -> anyhow::Result<()> {
    sqlx::query("UPDATE workspaces SET knowledge_revision = knowledge_revision + 1 WHERE id = $1")
        .bind(workspace_id)
        .execute(pool)
        .await?;
    Ok(())
}

async fn bump_revision_in(tx: &mut sqlx::Transaction<'_, sqlx::Any>, workspace_id: &str) -> anyhow::Result<()> {
    sqlx::query("UPDATE workspaces SET knowledge_revision = knowledge_revision + 1 WHERE id = $1")
        .bind(workspace_id)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

/// The bytes of every page the workspace keeps (its cap counts these).
pub async fn workspace_bytes(pool: &Pool, workspace_id: &str) -> anyhow::Result<i64> {
    let (bytes,): (Option<i64>,) =
        sqlx::query_as("SELECT CAST(SUM(bytes) AS BIGINT) FROM knowledge_pages WHERE workspace_id = $1")
            .bind(workspace_id)
            .fetch_one(pool)
            .await?;
    Ok(bytes.unwrap_or(0))
}

/// The workspace's knowledge revision (0 for no such workspace).
pub async fn revision(pool: &Pool, workspace_id: &str) -> anyhow::Result<i64> {
    let found: Option<(i64,)> = sqlx::query_as("SELECT knowledge_revision FROM workspaces WHERE id = $1")
        .bind(workspace_id)
        .fetch_optional(pool)
        .await?;
    Ok(found.map_or(0, |(revision,)| revision))
}

/// A chunk as the index reads it.
#[derive(Debug, FromRow)]
pub struct IndexedChunk {
    pub id: String,
    pub title: String,
    pub section: String,
    pub text: String,
    pub language: String,
    /// Its vector, when the model asked for made one (base64 f32).
    pub embedding: Option<String>,
}

/// Every chunk of the workspace, in id order, with its vector by `model`
/// (an embedder's tag).
pub async fn chunks_to_index(
    pool: &Pool,
    workspace_id: &str,
    model: Option<&str>,
) -> anyhow::Result<Vec<IndexedChunk>> {
    Ok(sqlx::query_as(
        "SELECT id, title, section, text, language,
           CASE WHEN embedding_model = $2 THEN embedding ELSE NULL END AS embedding
         FROM knowledge_chunks WHERE workspace_id = $1 ORDER BY id",
    )
    .bind(workspace_id)
    .bind(model.unwrap_or(""))
    .fetch_all(pool)
    .await?)
}

/// The chunks of a page without a vector by `model` (an embedder's tag):
/// (id, title, section, text).
pub async fn chunks_to_embed(
    pool: &Pool,
    source_id: &str,
    url: &str,
    model: &str,
) -> anyhow::Result<Vec<(String, String, String, String)>> {
    Ok(sqlx::query_as(
        "SELECT c.id, c.title, c.section, c.text FROM knowledge_chunks c
           JOIN knowledge_pages p ON p.id = c.page_id
         WHERE p.source_id = $1 AND p.url = $2 AND (c.embedding_model IS NULL OR c.embedding_model <> $3)
         ORDER BY c.position",
    )
    .bind(source_id)
    .bind(url)
    .bind(model)
    .fetch_all(pool)
    .await?)
}

/// Keeps chunks' vectors made by `model`.
pub async fn set_embeddings(pool: &Pool, model: &str, vectors: &[(String, String)]) -> anyhow::Result<()> {
    let mut conn = pool.acquire().await?;
    let mut tx = conn.begin_write().await?;
    for (id, vector) in vectors {
        sqlx::query("UPDATE knowledge_chunks SET embedding = $1, embedding_model = $2 WHERE id = $3")
            .bind(vector)
            .bind(model)
            .bind(id)
            .execute(&mut *tx)
            .await?;
    }
    tx.commit().await?;
    Ok(())
}

/// A chunk as search returns it.
#[derive(Debug, Clone, FromRow)]
pub struct ChunkRow {
    pub id: String,
    pub source_id: String,
    pub url: String,
    pub title: String,
    pub section: String,
    pub text: String,
}

/// The chunks named, of the workspace (in no order).
pub async fn chunks_by_id(pool: &Pool, workspace_id: &str, ids: &[String]) -> anyhow::Result<Vec<ChunkRow>> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let placeholders: Vec<String> = (0..ids.len()).map(|i| format!("${}", i + 2)).collect();
    let sql = format!(
        "SELECT id, source_id, url, title, section, text FROM knowledge_chunks
         WHERE workspace_id = $1 AND id IN ({})",
        placeholders.join(", ")
    );
    let mut query = sqlx::query_as(&sql).bind(workspace_id);
    for id in ids {
        query = query.bind(id);
    }
    Ok(query.fetch_all(pool).await?)
}

/// A question the knowledge did not answer.
pub struct NewGap<'a> {
    pub workspace_id: &'a str,
    pub conversation_id: &'a str,
    pub external_user_id: &'a str,
    pub question: &'a str,
    pub reason: &'a str,
    pub language: &'a str,
}

pub async fn insert_gap(pool: &Pool, gap: NewGap<'_>, now: i64) -> anyhow::Result<()> {
    sqlx::query(
        "INSERT INTO knowledge_gaps (id, workspace_id, conversation_id, external_user_id, question, reason, language,
           created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
    )
    .bind(new_id("kg"))
    .bind(gap.workspace_id)
    .bind(gap.conversation_id)
    .bind(gap.external_user_id)
    .bind(gap.question)
    .bind(gap.reason)
    .bind(gap.language)
    .bind(now)
    .execute(pool)
    .await?;
    Ok(())
}

/// A recorded gap.
#[derive(Debug, Clone, FromRow)]
pub struct GapRow {
    pub question: String,
    pub reason: String,
    pub language: String,
    pub created_at: i64,
}

/// The workspace's gaps since `since`, newest first, `limit` at most.
pub async fn gaps(pool: &Pool, workspace_id: &str, since: i64, limit: i64) -> anyhow::Result<Vec<GapRow>> {
    Ok(sqlx::query_as(
        "SELECT question, reason, language, created_at FROM knowledge_gaps WHERE workspace_id = $1 AND created_at >= $2
         ORDER BY created_at DESC, id LIMIT $3",
    )
    .bind(workspace_id)
    .bind(since)
    .bind(limit)
    .fetch_all(pool)
    .await?)
}
