//! What the assistant knows of its host (issue #45): knowledge sources (a
//! sitemap, a page or the pages under a path, a file, a snippet), synced
//! in the background into pages and chunks in the database, and searched
//! by full text (BM25 with the widget's languages' stemming) — by the
//! host (`POST /v1/knowledge/search`) and by the model through the
//! built-in `search_knowledge` tool, whose results carry ids the reply
//! cites; citations of anything a search of the turn did not return are
//! dropped ([`cite`]). Turns that searched and found nothing to cite are
//! recorded as content gaps ([`gaps`]).
//!
//! - [`sync`]: the background worker (leases, one replica per source);
//! - [`fetch`]: polite, safe fetching; [`sitemap`]: sitemap files;
//! - [`extract`]: a page's main content by section; [`chunk`]: passages;
//! - [`analyze`] and [`index`]: the full-text ranking, behind [`Retriever`];
//! - [`cli`]: `context-assistant knowledge …`, the API from a terminal.

pub mod analyze;
pub mod chunk;
pub mod cite;
pub mod cli;
pub mod embed;
pub mod extract;
pub mod fetch;
pub mod gaps;
pub mod index;
mod reader;
pub mod sitemap;
pub mod sync;

use std::collections::HashMap;
use std::sync::Arc;

use anyhow::Context as _;
use futures::future::BoxFuture;
pub use index::{Ranked, Retriever};

use crate::attachments::Attachments;
use crate::db::{self, Pool};
use index::{ChunkText, Index};

pub use crate::config::KnowledgeSettings;

/// Workspaces whose full-text index one replica keeps in memory at once.
const MAX_INDEXES: usize = 256;
/// Candidates each ranking gives the fusion.
const CANDIDATES: usize = 20;

/// A chunk a search found.
#[derive(Debug, Clone)]
pub struct Hit {
    pub chunk_id: String,
    pub source_id: String,
    /// The page, with the section's `#fragment` where it has one; empty
    /// for a snippet or a file without an address.
    pub url: String,
    pub title: String,
    pub section: String,
    pub text: String,
    pub score: f32,
}

/// An index, and the tag of the embedder whose vectors it holds (none:
/// full text only).
type Tagged = (Option<String>, Arc<Index>);

/// The workspace's knowledge: search, and the sync worker.
#[derive(Clone)]
pub struct Knowledge {
    inner: Arc<Inner>,
}

struct Inner {
    pool: Pool,
    settings: KnowledgeSettings,
    /// Where a workspace's own embeddings model is set.
    workspaces: crate::workspaces::Workspaces,
    attachments: Attachments,
    clock: crate::clock::Clock,
    /// Each workspace's index, at the revision it was built from, with
    /// the vectors of the embedder tagged (none: full text only).
    indexes: std::sync::Mutex<HashMap<String, Tagged>>,
    /// One index is built at a time (a build reads every chunk).
    building: tokio::sync::Mutex<()>,
    /// Pages are kept one at a time on this replica, so the workspace's
    /// byte cap is checked against what is kept (two replicas syncing two
    /// sources of one workspace at once may pass it by a page each).
    keeping: tokio::sync::Mutex<()>,
    /// Told when a sync is wanted now.
    wake: tokio::sync::Notify,
    /// This replica's name on the leases it takes.
    owner: String,
    /// The server's embeddings endpoint, when hybrid search is configured.
    embedder: Option<Arc<embed::Embedder>>,
    /// The workspaces' own embeddings endpoints, by when each was set.
    own_embedders: std::sync::Mutex<HashMap<String, (i64, Arc<embed::Embedder>)>>,
    /// Cancelled when the server shuts down: the worker and its syncs stop
    /// where they are (their leases lapse; another replica, or this one
    /// started again, goes on).
    stopped: tokio_util::sync::CancellationToken,
}

impl Knowledge {
    /// The service; an error for a server embeddings endpoint that cannot be used.
    pub fn new(
        pool: Pool,
        settings: KnowledgeSettings,
        workspaces: crate::workspaces::Workspaces,
        attachments: Attachments,
        clock: crate::clock::Clock,
    ) -> anyhow::Result<Self> {
        let embedder = match &settings.embeddings {
            None => None,
            Some(config) => Some(Arc::new(embed::Embedder::new(config).context("CA_EMBEDDINGS_BASE_URL")?)),
        };
        Ok(Self {
            inner: Arc::new(Inner {
                pool,
                settings,
                workspaces,
                attachments,
                clock,
                indexes: std::sync::Mutex::default(),
                building: tokio::sync::Mutex::default(),
                keeping: tokio::sync::Mutex::default(),
                wake: tokio::sync::Notify::new(),
                owner: crate::ids::new_id("replica"),
                embedder,
                own_embedders: std::sync::Mutex::default(),
                stopped: tokio_util::sync::CancellationToken::new(),
            }),
        })
    }

    pub fn settings(&self) -> &KnowledgeSettings {
        &self.inner.settings
    }

    /// The workspace's embeddings model, when it has one (else its search
    /// is full text).
    pub async fn embeddings_model(&self, workspace_id: &str) -> Option<String> {
        self.embedder(workspace_id).await.map(|e| e.model().to_owned())
    }

    /// The workspace's embeddings endpoint: its own (at its own model's
    /// endpoint, with its key) if it set one, else the server's, if any.
    pub(crate) async fn embedder(&self, workspace_id: &str) -> Option<Arc<embed::Embedder>> {
        let own = match self.inner.workspaces.own_embeddings(workspace_id).await {
            Ok(own) => own,
            Err(error) => {
                tracing::error!(error = format!("{error:#}"), "cannot read the workspace's embeddings model");
                None
            }
        };
        let Some(own) = own else {
            return self.inner.embedder.clone();
        };
        let mut cached = self.inner.own_embedders.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((at, embedder)) = cached.get(workspace_id)
            && *at == own.updated_at
        {
            return Some(embedder.clone());
        }
        match embed::Embedder::for_workspace(&own.base_url, own.api_key.expose(), &own.model, own.allow_private) {
            Ok(embedder) => {
                let embedder = Arc::new(embedder);
                if cached.len() >= MAX_INDEXES {
                    cached.clear();
                }
                cached.insert(workspace_id.to_owned(), (own.updated_at, embedder.clone()));
                Some(embedder)
            }
            Err(error) => {
                tracing::warn!(error = format!("{error:#}"), "cannot use the workspace's embeddings model");
                None
            }
        }
    }

    /// Stops the sync worker (the server is shutting down).
    pub fn stop(&self) {
        self.inner.stopped.cancel();
    }

    /// Starts a sync wanted now on this replica without waiting for the poll.
    pub fn wake(&self) {
        self.inner.wake.notify_one();
    }

    /// The `limit` chunks of the workspace that best answer `query`, best first.
    pub async fn search(&self, workspace_id: &str, query: &str, limit: usize) -> anyhow::Result<Vec<Hit>> {
        let retriever: Box<dyn Retriever + '_> = match self.embedder(workspace_id).await {
            None => Box::new(FullText(self)),
            Some(embedder) => Box::new(Hybrid { knowledge: self, embedder }),
        };
        let ranked = retriever.search(workspace_id, query, limit).await?;
        let ids: Vec<String> = ranked.iter().map(|r| r.chunk_id.clone()).collect();
        let mut rows: HashMap<String, db::knowledge::ChunkRow> =
            db::knowledge::chunks_by_id(&self.inner.pool, workspace_id, &ids)
                .await?
                .into_iter()
                .map(|row| (row.id.clone(), row))
                .collect();
        // A chunk replaced since the index was built is left out.
        Ok(ranked
            .into_iter()
            .filter_map(|r| {
                let row = rows.remove(&r.chunk_id)?;
                Some(Hit {
                    chunk_id: row.id,
                    source_id: row.source_id,
                    url: row.url,
                    title: row.title,
                    section: row.section,
                    text: row.text,
                    score: r.score,
                })
            })
            .collect())
    }

    /// Full text and vectors, fused (reciprocal rank fusion) over the best
    /// [`CANDIDATES`] of each; full text alone when the query cannot be
    /// embedded or no chunk has a vector yet.
    async fn hybrid(
        &self,
        embedder: &embed::Embedder,
        workspace_id: &str,
        query: &str,
        limit: usize,
    ) -> anyhow::Result<Vec<Ranked>> {
        let index = self.index(workspace_id, Some(embedder.tag())).await?;
        let full_text = index.search(query, CANDIDATES.max(limit));
        if !index.has_vectors() {
            return Ok(full_text.into_iter().take(limit).collect());
        }
        match embedder.embed(vec![query.to_owned()]).await {
            Ok(mut vectors) => {
                let nearest = index.nearest(&vectors.remove(0), CANDIDATES.max(limit));
                Ok(index::fuse(&[full_text, nearest], limit))
            }
            Err(error) => {
                tracing::warn!(error = format!("{error:#}"), "cannot embed a query; searching full text only");
                Ok(full_text.into_iter().take(limit).collect())
            }
        }
    }

    /// The workspace's index at its current revision, with the vectors
    /// of the embedder tagged `vectors` (none: full text only), built if
    /// missing or stale.
    async fn index(&self, workspace_id: &str, vectors: Option<&str>) -> anyhow::Result<Arc<Index>> {
        let revision = db::knowledge::revision(&self.inner.pool, workspace_id).await?;
        let cached = |inner: &Inner| {
            inner
                .indexes
                .lock()
                .expect("not poisoned")
                .get(workspace_id)
                .filter(|(tag, i)| i.revision == revision && tag.as_deref() == vectors)
                .map(|(_, i)| i.clone())
        };
        if let Some(index) = cached(&self.inner) {
            index.touch();
            return Ok(index);
        }
        let _building = self.inner.building.lock().await;
        if let Some(index) = cached(&self.inner) {
            return Ok(index);
        }
        let chunks = db::knowledge::chunks_to_index(&self.inner.pool, workspace_id, vectors).await?;
        let started = std::time::Instant::now();
        let index = tokio::task::spawn_blocking(move || {
            Index::build(
                revision,
                chunks.iter().map(|c| ChunkText {
                    id: &c.id,
                    title: &c.title,
                    section: &c.section,
                    text: &c.text,
                    language: &c.language,
                    vector: c.embedding.as_deref().and_then(embed::decode),
                }),
            )
        })
        .await?;
        tracing::debug!(
            workspace_id,
            revision,
            chunks = index.len(),
            duration_ms = started.elapsed().as_secs_f64() * 1000.0,
            "knowledge index built"
        );
        let index = Arc::new(index);
        let mut indexes = self.inner.indexes.lock().expect("not poisoned");
        // The indexes of the workspaces searched least lately go first
        // (each is about the size of its workspace's text).
        if indexes.len() >= MAX_INDEXES && !indexes.contains_key(workspace_id) {
            let oldest = indexes.iter().min_by_key(|(_, (_, i))| i.used()).map(|(id, _)| id.clone());
            indexes.remove(&oldest.expect("the cache is full"));
        }
        indexes.insert(workspace_id.to_owned(), (vectors.map(str::to_owned), index.clone()));
        Ok(index)
    }
}

/// The embedded full-text ranking.
struct FullText<'k>(&'k Knowledge);

impl Retriever for FullText<'_> {
    fn search<'a>(
        &'a self,
        workspace_id: &'a str,
        query: &'a str,
        limit: usize,
    ) -> BoxFuture<'a, anyhow::Result<Vec<Ranked>>> {
        Box::pin(async move { Ok(self.0.index(workspace_id, None).await?.search(query, limit)) })
    }
}

/// The full-text ranking and an embedder's vectors, fused.
struct Hybrid<'k> {
    knowledge: &'k Knowledge,
    embedder: Arc<embed::Embedder>,
}

impl Retriever for Hybrid<'_> {
    fn search<'a>(
        &'a self,
        workspace_id: &'a str,
        query: &'a str,
        limit: usize,
    ) -> BoxFuture<'a, anyhow::Result<Vec<Ranked>>> {
        Box::pin(self.knowledge.hybrid(&self.embedder, workspace_id, query, limit))
    }
}

/// Characters of a search result's snippet, at most.
pub const SNIPPET_CHARS: usize = 300;

/// The part of `text` a reader of `query` wants first: from the sentence
/// holding the first of the query's longer words the text has, at most
/// [`SNIPPET_CHARS`] characters (marked `…` where cut).
pub fn snippet(text: &str, query: &str) -> String {
    let lower = text.to_lowercase();
    let mut words: Vec<String> =
        query.split(|c: char| !c.is_alphanumeric()).filter(|w| w.chars().count() >= 3).map(str::to_lowercase).collect();
    words.sort_by_key(|w| std::cmp::Reverse(w.len()));
    // `lower` may differ from `text` in length: find the character index.
    let found = words.iter().filter_map(|w| lower.find(w.as_str()).map(|at| lower[..at].chars().count())).min();
    let chars: Vec<char> = text.chars().collect();
    let mut start = found.unwrap_or(0).min(chars.len());
    // Back to the sentence's start, within 120 characters.
    let floor = start.saturating_sub(120);
    while start > floor && !matches!(chars[start - 1], '.' | '!' | '?' | '\n' | '。') {
        start -= 1;
    }
    if start == floor && floor > 0 {
        while start < chars.len() && !chars[start].is_whitespace() {
            start += 1;
        }
    }
    let piece: String = chars[start..].iter().take(SNIPPET_CHARS).collect();
    let mut out = String::new();
    if start > 0 {
        out.push('…');
    }
    out.push_str(piece.trim());
    if start + SNIPPET_CHARS < chars.len() {
        out.push('…');
    }
    out
}

/// The built-in tool's name, as the model is offered it.
pub const TOOL: &str = "search_knowledge";
/// The integration name the built-in tool goes under (reserved: no MCP
/// server may be connected under it).
pub const INTEGRATION: &str = "knowledge";
/// Passages one search gives the model.
pub const TOOL_RESULTS: usize = 5;

/// The built-in read-only tool that searches the workspace's knowledge.
pub fn tool_spec() -> crate::host::ToolSpec {
    crate::host::ToolSpec {
        name: TOOL.into(),
        description: "Search the website's help center and knowledge base (its own pages, files and answers). \
            Use it before answering any question about the website, its products, services, policies or how to \
            use it. Returns passages, each with an id such as S1 to cite."
            .into(),
        verb: widget::wire::Verb::Get,
        input_schema: crate::host::InputSchema::new(&serde_json::json!({
            "type": "object",
            "properties": {
                "query": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": 500,
                    "description": "What to look for: the visitor's question, or its key words"
                }
            },
            "required": ["query"],
            "additionalProperties": false
        })),
        direct: false,
        origin: crate::host::ToolOrigin {
            integration: INTEGRATION.into(),
            name: TOOL.into(),
            title: Some("Search the help center".into()),
            digest: "built-in".into(),
            app: None,
        },
    }
}

/// Whether `tool` is the built-in knowledge search.
pub fn is_builtin(tool: &crate::host::ToolSpec) -> bool {
    tool.origin.integration == INTEGRATION && tool.origin.name == TOOL && tool.origin.digest == "built-in"
}

#[cfg(test)]
mod tests {
    use super::snippet;

    #[test]
    fn a_snippet_starts_at_the_sentence_that_answers() {
        let text = format!("{} We deliver to Brookside on weekdays. Other things.", "Filler words here. ".repeat(30));
        let s = snippet(&text, "Do you deliver to Brookside?");
        assert!(s.starts_with("…We deliver to Brookside"), "{s}");
        assert_eq!(snippet("Short text.", "nothing"), "Short text.");
        assert!(snippet(&"x".repeat(1000), "y").chars().count() <= super::SNIPPET_CHARS + 1);
    }
}
