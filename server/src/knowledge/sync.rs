//! The sync worker: every replica looks for sources due for a sync (new,
//! asked for by hand, due by their `refresh_hours`, or left half done by a
//! replica that stopped) and takes each under a lease it renews while the
//! sync runs, so one replica syncs a source at a time and another takes
//! over once a stopped replica's lease lapses. A sync that fails as a
//! whole (a sitemap that cannot be read) keeps every page it had; a page
//! that fails keeps its last good content unless it is gone (404, 410,
//! refused by robots.txt). Pages a completed sync did not see are removed.
//!
//! Reading pages is processor work: it runs on one thread of the lowest
//! priority ([`reader`](super::reader)), so chat turns come first.

use std::collections::{HashSet, VecDeque};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use futures::StreamExt;
use serde::Deserialize;
use sha2::{Digest, Sha256};
use url::Url;

use super::extract::{self, Document, Unreadable};
use super::fetch::{self, FetchError, Fetched, Fetcher, Validators};
use super::{Knowledge, analyze, chunk, sitemap};
use crate::db::knowledge::{self as store, Claimed, NewChunk, PageFailure, ReadPage, SyncEnd};

/// How long a lease lasts without renewal.
const LEASE: Duration = Duration::from_secs(30);
/// Syncs one replica runs at once.
const SYNCS_PER_REPLICA: usize = 2;
/// Sitemap files read for one source (an index and its children), at most.
const MAX_SITEMAPS: usize = 50;
/// Longest one page's reading may wait and take before it is given up
/// (the reader yields to everything else: under load it waits its turn).
const READ_TIMEOUT: Duration = Duration::from_secs(60);

/// A source's settings as kept (`knowledge_sources.config`).
#[derive(Debug, Default, Deserialize)]
pub struct SourceConfig {
    pub url: Option<String>,
    pub crawl: Option<Crawl>,
    pub attachment_id: Option<String>,
    pub title: Option<String>,
    pub text: Option<String>,
    /// The server's own demo help center, on its loopback address (set
    /// only by the demo's seeding, never by the API).
    #[serde(default)]
    pub trusted: bool,
}

/// Which linked pages a `url` source reads besides its own.
#[derive(Debug, Default, Deserialize)]
pub struct Crawl {
    /// Links are followed when their address starts with this (a path,
    /// or an absolute URL on the start page's site).
    pub prefix: Option<String>,
    pub max_pages: Option<usize>,
}

impl Knowledge {
    /// Starts the replica's sync worker.
    pub fn spawn_worker(&self) {
        let knowledge = self.clone();
        tokio::spawn(async move {
            let slots = Arc::new(tokio::sync::Semaphore::new(SYNCS_PER_REPLICA));
            loop {
                loop {
                    let Ok(slot) = slots.clone().try_acquire_owned() else { break };
                    let now = knowledge.inner.clock.now_ms();
                    let until = now + LEASE.as_millis() as i64;
                    match store::claim_due(&knowledge.inner.pool, &knowledge.inner.owner, now, until).await {
                        Ok(Some(claimed)) => {
                            let knowledge = knowledge.clone();
                            tokio::spawn(async move {
                                knowledge.run(claimed).await;
                                drop(slot);
                            });
                        }
                        Ok(None) => break,
                        Err(error) => {
                            tracing::error!(error = format!("{error:#}"), "cannot look for knowledge sources to sync");
                            break;
                        }
                    }
                }
                tokio::select! {
                    () = tokio::time::sleep(knowledge.inner.settings.poll) => {}
                    () = knowledge.inner.wake.notified() => {}
                    () = knowledge.inner.stopped.cancelled() => return,
                }
            }
        });
    }

    /// Runs one claimed sync, renewing its lease; a lease lost stops it.
    async fn run(&self, claimed: Claimed) {
        let span = tracing::info_span!("knowledge_sync", source_id = %claimed.id, workspace_id = %claimed.workspace_id);
        let _ = tracing::Instrument::instrument(
            async {
                let lost = Arc::new(AtomicBool::new(false));
                let renewing = {
                    let (pool, owner, id, lost, clock) = (
                        self.inner.pool.clone(),
                        self.inner.owner.clone(),
                        claimed.id.clone(),
                        lost.clone(),
                        self.inner.clock.clone(),
                    );
                    tokio::spawn(async move {
                        loop {
                            tokio::time::sleep(LEASE / 3).await;
                            let until = clock.now_ms() + LEASE.as_millis() as i64;
                            match store::renew_lease(&pool, &id, &owner, until).await {
                                Ok(true) => {}
                                Ok(false) => {
                                    lost.store(true, Ordering::SeqCst);
                                    break;
                                }
                                Err(error) => {
                                    tracing::warn!(error = format!("{error:#}"), "cannot renew a sync's lease")
                                }
                            }
                        }
                    })
                };
                let started = std::time::Instant::now();
                let revised = std::sync::Mutex::new(std::time::Instant::now());
                // The workspace's embeddings endpoint, once for the whole sync.
                let embedder = self.embedder(&claimed.workspace_id).await;
                let sync = Sync { knowledge: self, claimed: &claimed, lost: &lost, revised, embedder };
                let result = sync.run().await;
                renewing.abort();
                if lost.load(Ordering::SeqCst) {
                    tracing::info!("a sync stopped: its source was removed or taken over");
                    return;
                }
                if self.inner.stopped.is_cancelled() {
                    tracing::info!("a sync stopped by the shutdown: it goes on once its lease lapses");
                    return;
                }
                let now = self.inner.clock.now_ms();
                let next = (claimed.refresh_hours > 0).then(|| now + claimed.refresh_hours * 3_600_000);
                let end = match &result {
                    Ok(()) => SyncEnd { status: "ready", error: None, next_sync_at: next, completed: true },
                    Err(why) => {
                        SyncEnd { status: "failed", error: Some(why.as_str()), next_sync_at: next, completed: false }
                    }
                };
                if let Err(error) = store::finish_sync(
                    &self.inner.pool,
                    &claimed.workspace_id,
                    &claimed.id,
                    &self.inner.owner,
                    end,
                    now,
                )
                .await
                {
                    tracing::error!(error = format!("{error:#}"), "cannot record the end of a sync");
                }

                let duration_ms = started.elapsed().as_secs_f64() * 1000.0;
                match result {
                    Ok(()) => tracing::info!(duration_ms, "knowledge source synced"),
                    Err(why) => tracing::warn!(duration_ms, why, "knowledge source sync failed"),
                }
            },
            span,
        )
        .await;
    }
}

/// One sync of one source.
struct Sync<'a> {
    knowledge: &'a Knowledge,
    claimed: &'a Claimed,
    lost: &'a AtomicBool,
    /// When the revision last moved (the sync's start, at first).
    revised: std::sync::Mutex<std::time::Instant>,
    /// What gives the passages their vectors, if anything.
    embedder: Option<Arc<super::embed::Embedder>>,
}

/// A long sync makes what it read searchable this often (each replica's
/// index is rebuilt then, not at every page); a short one at its end.
const REVISION_EVERY: Duration = Duration::from_secs(30);

/// What reading one address came to.
enum Read {
    /// Read (or unchanged): the pages it links to.
    Read(Vec<Url>),
    /// Failed; recorded on the page.
    Failed,
}

impl Sync<'_> {
    /// Whether the sync must stop where it is: its lease was lost, or the
    /// server is shutting down.
    fn stopped(&self) -> bool {
        self.lost.load(Ordering::SeqCst) || self.knowledge.inner.stopped.is_cancelled()
    }

    /// The sync; `Err` says why it failed as a whole.
    async fn run(&self) -> Result<(), String> {
        let config: SourceConfig = serde_json::from_str(&self.claimed.config).unwrap_or_default();
        match self.claimed.kind.as_str() {
            "text" => self.text(&config).await,
            "file" => self.file(&config).await,
            "url" => self.pages(&config).await,
            "sitemap" => self.sitemap(&config).await,
            other => Err(format!("unknown kind of source `{other}`")),
        }
    }

    fn pool(&self) -> &crate::db::Pool {
        &self.knowledge.inner.pool
    }

    fn now(&self) -> i64 {
        self.knowledge.inner.clock.now_ms()
    }

    fn fetcher(&self, config: &SourceConfig) -> Fetcher {
        let settings = &self.knowledge.inner.settings;
        let allow_private = settings.allow_private || config.trusted;
        let client = crate::host::tool_http_client(settings.fetch_timeout, !allow_private);
        Fetcher::new(client, allow_private, settings.max_page_bytes)
    }

    /// A snippet the host wrote: one page.
    async fn text(&self, config: &SourceConfig) -> Result<(), String> {
        let title = config.title.clone().unwrap_or_default();
        let text = config.text.clone().unwrap_or_default();
        let document = if extract::looks_like_markdown("", &text) {
            extract::markdown(&text, &title)
        } else {
            extract::plain(&text, &title)
        };
        let url = config.url.clone().unwrap_or_default();
        self.keep(&page_key(&url, "snippet"), &url, document, None, text.len() as i64, None).await?;
        self.finish_pages().await
    }

    /// A file the host uploaded: one page, read as attachments are.
    async fn file(&self, config: &SourceConfig) -> Result<(), String> {
        let id = config.attachment_id.as_deref().unwrap_or_default();
        let attachment = crate::db::attachments::by_id(self.pool(), id)
            .await
            .map_err(|e| format!("cannot read the file's record: {e:#}"))?
            .filter(|a| a.workspace_id == self.claimed.workspace_id)
            .ok_or("the file no longer exists")?;
        let attachments = &self.knowledge.inner.attachments;
        let bytes = attachments
            .open(&attachment.object_key)
            .await
            .map_err(|_| "the file cannot be read from the store".to_owned())?
            .bytes()
            .await
            .map_err(|_| "the file cannot be read from the store".to_owned())?;
        let name = attachment.name.clone();
        let document = if attachment.media_type == "application/pdf" {
            let text = crate::attachments::pdf::text(bytes.clone())
                .await
                .map_err(|why| format!("the PDF cannot be read: {why}"))?;
            Ok(extract::plain(&text.replace('\u{c}', "\n\n"), &name))
        } else {
            let text = fetch::decode(&bytes, Some("text/plain; charset=utf-8"));
            read_blocking(move || {
                if extract::looks_like_html(&text) {
                    let base = Url::parse("https://file.invalid/").expect("a valid URL");
                    extract::html(&text, &base).map(|mut d| {
                        if d.title.is_empty() {
                            d.title = name.clone();
                        }
                        d.sections.iter_mut().for_each(|s| s.fragment = None);
                        d
                    })
                } else if extract::looks_like_markdown(&name, &text) {
                    Ok(extract::markdown(&text, &name))
                } else {
                    Ok(extract::plain(&text, &name))
                }
            })
            .await
        };
        let document = document.map_err(|why| format!("the file cannot be read: {why}"))?;
        self.keep(&format!("file:{}", attachment.id), "", document, None, bytes.len() as i64, None).await?;
        self.finish_pages().await
    }

    /// A page, or the pages linked from it under a path prefix.
    async fn pages(&self, config: &SourceConfig) -> Result<(), String> {
        let start = config.url.as_deref().and_then(|u| Url::parse(u).ok()).ok_or("the source has no valid url")?;
        let fetcher = self.fetcher(config);
        let Some(crawl) = &config.crawl else {
            self.read(&fetcher, &start, false).await;
            return self.finish_pages().await;
        };
        let prefix = crawl_prefix(&start, crawl.prefix.as_deref());
        let max = crawl
            .max_pages
            .unwrap_or(self.knowledge.inner.settings.max_pages)
            .min(self.knowledge.inner.settings.max_pages);
        let mut queued: HashSet<Url> = HashSet::from([start.clone()]);
        let mut queue: VecDeque<Url> = VecDeque::from([start]);
        let mut read = 0;
        while !queue.is_empty() && read < max && !self.stopped() {
            let batch: Vec<Url> = queue.drain(..queue.len().min(max - read).min(fetch::PER_SITE * 2)).collect();
            read += batch.len();
            let reads: Vec<_> = batch.iter().map(|url| self.read(&fetcher, url, true)).collect();
            let results: Vec<Read> = futures::stream::iter(reads).buffered(fetch::PER_SITE).collect().await;
            for result in results {
                let Read::Read(links) = result else { continue };
                for link in links {
                    if queued.len() < max && link.as_str().starts_with(prefix.as_str()) && queued.insert(link.clone()) {
                        queue.push_back(link);
                    }
                }
            }
        }
        self.finish_pages().await
    }

    /// The pages a sitemap (or a sitemap index) lists.
    async fn sitemap(&self, config: &SourceConfig) -> Result<(), String> {
        let start = config.url.as_deref().and_then(|u| Url::parse(u).ok()).ok_or("the source has no valid url")?;
        let fetcher = self.fetcher(config);
        let max = self.knowledge.inner.settings.max_pages;
        let mut pages: Vec<Url> = Vec::new();
        let mut files: VecDeque<Url> = VecDeque::from([start.clone()]);
        let mut seen_files = 0;
        while let Some(file) = files.pop_front() {
            seen_files += 1;
            if seen_files > MAX_SITEMAPS {
                break;
            }
            let listed = match fetcher.get(&file, None).await {
                Ok(Fetched::Page { bytes, .. }) => sitemap::parse(&bytes).map_err(|e| e.to_string()),
                Ok(Fetched::NotModified) => Err("the site answered 304 without being asked".into()),
                Err(error) => Err(error.to_string()),
            };
            let listed = match listed {
                Ok(listed) => listed,
                // The sitemap itself: nothing is known, nothing is removed.
                Err(why) if file == start => return Err(format!("the sitemap cannot be read: {why}")),
                Err(why) => {
                    tracing::info!(sitemap = %file, why, "a listed sitemap cannot be read");
                    continue;
                }
            };
            files.extend(listed.sitemaps.into_iter().filter(|s| fetch::same_site(&start, s)));
            for page in listed.pages {
                if pages.len() < max && fetch::same_site(&start, &page) && !pages.contains(&page) {
                    pages.push(page);
                }
            }
        }
        let reads: Vec<_> = pages.iter().map(|url| self.read(&fetcher, url, false)).collect();
        let _: Vec<Read> = futures::stream::iter(reads).buffer_unordered(fetch::PER_SITE).collect().await;
        self.finish_pages().await
    }

    /// Pages not seen by this sync are removed (unless it was stopped).
    async fn finish_pages(&self) -> Result<(), String> {
        if self.stopped() {
            return Ok(());
        }
        let removed =
            store::remove_unseen(self.pool(), &self.claimed.workspace_id, &self.claimed.id, self.claimed.generation)
                .await
                .map_err(|e| format!("cannot remove the pages gone: {e:#}"))?;
        if removed > 0 {
            tracing::info!(removed, "pages gone from the source removed");
        }
        Ok(())
    }

    /// Fetches and keeps one page; its links when `links` (a crawl).
    async fn read(&self, fetcher: &Fetcher, url: &Url, links: bool) -> Read {
        if self.stopped() {
            return Read::Failed;
        }
        let key = url.as_str();
        let known = store::page(self.pool(), &self.claimed.id, key).await.ok().flatten();
        let validators = known
            .as_ref()
            .filter(|p| p.status == "ok" && p.content_hash.is_some())
            .map(|p| Validators { etag: p.etag.clone(), last_modified: p.last_modified.clone() });
        let kept_links = |page: &store::PageRow| -> Vec<Url> {
            page.links
                .as_deref()
                .and_then(|l| serde_json::from_str::<Vec<String>>(l).ok())
                .unwrap_or_default()
                .iter()
                .filter_map(|l| Url::parse(l).ok())
                .collect()
        };
        let fetched = tokio::select! {
            fetched = fetcher.get(url, validators.as_ref()) => fetched,
            () = self.knowledge.inner.stopped.cancelled() => return Read::Failed,
        };
        if self.stopped() {
            return Read::Failed;
        }
        match fetched {
            Ok(Fetched::NotModified) => {
                let page = known.expect("validators come from a kept page");
                // Unrecorded, it would be taken for gone and removed.
                if let Err(error) =
                    store::page_unchanged(self.pool(), &page.id, self.claimed.generation, self.now()).await
                {
                    self.not_kept(key, error).await;
                }
                Read::Read(kept_links(&page))
            }
            Ok(Fetched::Page { url: found, bytes, content_type, validators }) => {
                let size = bytes.len() as i64;
                match self.document(&found, bytes, content_type.as_deref()).await {
                    Ok(document) => {
                        let out = if links { document.links.clone() } else { Vec::new() };
                        let links = links.then(|| {
                            serde_json::to_string(&document.links.iter().map(Url::as_str).collect::<Vec<_>>())
                                .unwrap_or_default()
                        });
                        match self.keep(key, found.as_str(), document, Some(&validators), size, links).await {
                            Ok(()) => Read::Read(out),
                            Err(_) => Read::Failed,
                        }
                    }
                    Err((code, message)) => {
                        self.failed(key, code, None, &message, true).await;
                        Read::Failed
                    }
                }
            }
            Err(error) => {
                self.failed(key, error.code(), error.status(), &error.to_string(), error.gone()).await;
                if let (FetchError::Unreachable(_) | FetchError::Status(500..), Some(page)) = (&error, &known) {
                    // What was read before stays, and still leads on.
                    return Read::Read(kept_links(page));
                }
                Read::Failed
            }
        }
    }

    /// A fetched body as a document, by its type; or why not (code, message).
    async fn document(
        &self,
        url: &Url,
        bytes: Vec<u8>,
        content_type: Option<&str>,
    ) -> Result<Document, (&'static str, String)> {
        let media = content_type.unwrap_or("").split(';').next().unwrap_or("").trim().to_ascii_lowercase();
        let path = url.path().to_ascii_lowercase();
        let name = path.rsplit('/').next().unwrap_or_default().to_owned();
        if media == "application/pdf" || (media.is_empty() && bytes.starts_with(b"%PDF-")) {
            let text = crate::attachments::pdf::text(bytes)
                .await
                .map_err(|why| ("unreadable", format!("the PDF cannot be read: {why}")))?;
            return Ok(extract::plain(&text.replace('\u{c}', "\n\n"), &name));
        }
        let text = fetch::decode(&bytes, content_type);
        let url = url.clone();
        let kind = match media.as_str() {
            "text/html" | "application/xhtml+xml" | "" => "html",
            "text/markdown" | "text/x-markdown" => "markdown",
            "text/plain" if name.ends_with(".md") || name.ends_with(".markdown") => "markdown",
            "text/plain" => "text",
            _ => return Err(("unsupported_type", format!("pages of type {media} are not read"))),
        };
        read_blocking(move || match kind {
            "html" => extract::html(&text, &url),
            "markdown" => Ok(extract::markdown(&text, &name)),
            _ => Ok(extract::plain(&text, &name)),
        })
        .await
        .map_err(|why| ("unreadable", format!("the page cannot be read: {why}")))
    }

    /// Keeps a page read as `key` (its address, or the file's or snippet's
    /// key) unless its text is what was kept already.
    async fn keep(
        &self,
        key: &str,
        url: &str,
        document: Document,
        validators: Option<&Validators>,
        bytes: i64,
        links: Option<String>,
    ) -> Result<(), String> {
        let pool = self.pool();
        let known = match store::page(pool, &self.claimed.id, key).await {
            Ok(known) => known,
            Err(error) => return Err(self.not_kept(key, error).await),
        };
        let hash = fingerprint(&document);
        if let Some(page) =
            known.as_ref().filter(|p| p.content_hash.as_deref() == Some(hash.as_str()) && p.status == "ok")
        {
            if let Err(error) = store::page_unchanged(pool, &page.id, self.claimed.generation, self.now()).await {
                return Err(self.not_kept(key, error).await);
            }
            // Kept before an embeddings model was configured (or another one): its vectors now.
            self.embed(key).await;
            return Ok(());
        }
        let _keeping = self.knowledge.inner.keeping.lock().await;
        let kept = match store::workspace_bytes(pool, &self.claimed.workspace_id).await {
            Ok(kept) => kept,
            Err(error) => return Err(self.not_kept(key, error).await),
        };
        let cap = self.knowledge.inner.settings.max_workspace_bytes as i64;
        if kept - known.as_ref().map_or(0, |p| p.bytes) + bytes > cap {
            let message = format!("the workspace keeps {cap} bytes of pages at most");
            self.failed(key, "workspace_full", None, &message, false).await;
            return Err(message);
        }
        let language = analyze::language(self.claimed.language.as_deref().or(document.language.as_deref()));
        let chunks = chunk::chunks(&document)
            .into_iter()
            .map(|c| NewChunk {
                url: match (&c.fragment, url.is_empty()) {
                    (_, true) => String::new(),
                    (Some(fragment), false) => format!("{}#{fragment}", url.split('#').next().unwrap_or(url)),
                    (None, false) => url.to_owned(),
                },
                section: c.section,
                text: c.text,
            })
            .collect();
        let title = if document.title.is_empty() { url.to_owned() } else { document.title.clone() };
        let read = ReadPage {
            source_id: &self.claimed.id,
            workspace_id: &self.claimed.workspace_id,
            url: key,
            title: &title,
            language,
            etag: validators.and_then(|v| v.etag.as_deref()),
            last_modified: validators.and_then(|v| v.last_modified.as_deref()),
            content_hash: &hash,
            bytes,
            links,
            generation: self.claimed.generation,
            chunks,
        };
        if let Err(error) = store::store_page(pool, read, self.now()).await {
            return Err(self.not_kept(key, error).await);
        }
        self.embed(key).await;
        let due = {
            let mut revised = self.revised.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            let due = revised.elapsed() >= REVISION_EVERY;
            if due {
                *revised = std::time::Instant::now();
            }
            due
        };
        if due && let Err(error) = store::bump_revision(pool, &self.claimed.workspace_id).await {
            tracing::error!(error = format!("{error:#}"), "cannot move the knowledge revision");
        }
        Ok(())
    }

    /// Gives the page's chunks that lack one a vector by the embeddings
    /// model, if there is one; a failure leaves them to full text (and to
    /// the next sync).
    async fn embed(&self, key: &str) {
        let Some(embedder) = &self.embedder else { return };
        let pool = self.pool();
        let chunks = match store::chunks_to_embed(pool, &self.claimed.id, key, embedder.tag()).await {
            Ok(chunks) => chunks,
            Err(error) => {
                tracing::error!(error = format!("{error:#}"), "cannot read the chunks to embed");
                return;
            }
        };
        for batch in chunks.chunks(super::embed::BATCH) {
            // What a passage is about: its page and section, then its text.
            let texts = batch.iter().map(|(_, title, section, text)| format!("{title} — {section}\n{text}")).collect();
            match embedder.embed(texts).await {
                Ok(vectors) => {
                    let kept: Vec<(String, String)> =
                        batch.iter().zip(&vectors).map(|((id, ..), v)| (id.clone(), super::embed::encode(v))).collect();
                    if let Err(error) = store::set_embeddings(pool, embedder.tag(), &kept).await {
                        tracing::error!(error = format!("{error:#}"), "cannot keep the chunks' vectors");
                    }
                }
                Err(error) => {
                    tracing::warn!(
                        error = format!("{error:#}"),
                        "cannot embed a page's chunks; full text only for them"
                    );
                    return;
                }
            }
        }
    }

    /// A page read but not kept (the database refused it): recorded as
    /// failed, so the sync says so and what was kept of it before stays
    /// (a page this sync did not mark seen would be removed with the unseen
    /// ones); the next sync reads it again.
    async fn not_kept(&self, key: &str, error: anyhow::Error) -> String {
        tracing::error!(url = key, error = format!("{error:#}"), "cannot keep a page");
        let message = "the page was read but could not be kept; the next sync tries again";
        self.failed(key, "not_kept", None, message, false).await;
        message.to_owned()
    }

    async fn failed(&self, key: &str, code: &str, http_status: Option<u16>, message: &str, gone: bool) {
        let failure = PageFailure {
            source_id: &self.claimed.id,
            workspace_id: &self.claimed.workspace_id,
            url: key,
            generation: self.claimed.generation,
            code,
            http_status,
            message,
            gone,
        };
        tracing::info!(url = key, code, "a knowledge page was not read");
        if let Err(error) = store::page_failed(self.pool(), failure, self.now()).await {
            tracing::error!(error = format!("{error:#}"), "cannot record a page's failure");
        }
    }
}

/// Runs a page's reading on the reader thread (one at a time, at the
/// lowest priority), bounded in time.
async fn read_blocking(
    read: impl FnOnce() -> Result<Document, Unreadable> + Send + 'static,
) -> Result<Document, String> {
    match tokio::time::timeout(READ_TIMEOUT, super::reader::read(read)).await {
        Ok(Some(Ok(document))) => Ok(document),
        Ok(Some(Err(why))) => Err(why.to_string()),
        Ok(None) => Err("reading it failed".into()),
        Err(_) => Err("reading it took too long".into()),
    }
}

/// The key a page without an address of its own is kept under.
fn page_key(url: &str, fallback: &str) -> String {
    if url.is_empty() { fallback.to_owned() } else { url.to_owned() }
}

/// The fingerprint of what a document says (its title and sections).
fn fingerprint(document: &Document) -> String {
    let mut hash = Sha256::new();
    hash.update(document.title.as_bytes());
    for section in &document.sections {
        hash.update([0]);
        hash.update(section.heading.as_bytes());
        hash.update([1]);
        hash.update(section.fragment.as_deref().unwrap_or("").as_bytes());
        for block in &section.blocks {
            hash.update([2]);
            hash.update(block.as_bytes());
        }
    }
    hex::encode(hash.finalize())
}

/// The address prefix a crawl follows: `prefix` (a path on the start's
/// site, or an absolute URL there), else the start page's directory.
pub fn crawl_prefix(start: &Url, prefix: Option<&str>) -> Url {
    let mut base = start.clone();
    base.set_query(None);
    base.set_fragment(None);
    match prefix.map(str::trim).filter(|p| !p.is_empty()) {
        Some(p) => match start.join(p) {
            Ok(url) if fetch::same_site(start, &url) => url,
            _ => base,
        },
        None => {
            let path = base.path().to_owned();
            base.set_path(&path[..path.rfind('/').map_or(0, |i| i + 1)]);
            base
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_crawl_follows_the_start_pages_directory_unless_told() {
        let start = Url::parse("https://example.com/help/start.html?x=1").unwrap();
        assert_eq!(crawl_prefix(&start, None).as_str(), "https://example.com/help/");
        assert_eq!(crawl_prefix(&start, Some("/docs/")).as_str(), "https://example.com/docs/");
        assert_eq!(crawl_prefix(&start, Some("https://evil.example/")).as_str(), "https://example.com/help/start.html");
    }
}
