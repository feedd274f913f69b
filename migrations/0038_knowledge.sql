-- Knowledge sources (issue #45): what a workspace's assistant knows of its
-- host, the pages read from each source, the chunks search returns, and
-- the questions the knowledge did not answer. The database is the truth:
-- every search index is built from these rows.

CREATE TABLE knowledge_sources (
    id TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
    -- sitemap, url, file, text
    kind TEXT NOT NULL,
    name TEXT NOT NULL,
    -- The kind's settings as JSON: url, crawl, attachment_id, title, text.
    config TEXT NOT NULL,
    language TEXT,
    -- 0: synced only by hand.
    refresh_hours BIGINT NOT NULL,
    -- pending, syncing, ready, failed
    status TEXT NOT NULL,
    -- Why the last sync failed as a whole (the last good content stays).
    error TEXT,
    pages BIGINT NOT NULL DEFAULT 0,
    chunks BIGINT NOT NULL DEFAULT 0,
    created_at BIGINT NOT NULL,
    last_synced_at BIGINT,
    next_sync_at BIGINT,
    -- 1: a sync is wanted now (a new source, "sync now", one interrupted);
    -- 2: wanted again once the one running ends.
    sync_due BIGINT NOT NULL DEFAULT 1,
    -- The replica syncing it, until when (renewed while it runs).
    lease_owner TEXT,
    lease_until BIGINT NOT NULL DEFAULT 0,
    -- Counts the syncs begun: a page not seen by the current one is gone.
    generation BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX knowledge_sources_workspace ON knowledge_sources (workspace_id);
CREATE INDEX knowledge_sources_due ON knowledge_sources (sync_due, next_sync_at);

CREATE TABLE knowledge_pages (
    id TEXT PRIMARY KEY,
    source_id TEXT NOT NULL REFERENCES knowledge_sources(id) ON DELETE CASCADE,
    workspace_id TEXT NOT NULL,
    url TEXT NOT NULL,
    title TEXT NOT NULL DEFAULT '',
    etag TEXT,
    last_modified TEXT,
    -- SHA-256 of the text read: the same text is not chunked again.
    content_hash TEXT,
    bytes BIGINT NOT NULL DEFAULT 0,
    chunks BIGINT NOT NULL DEFAULT 0,
    -- For a crawl: the pages it links to (JSON), so an unchanged page
    -- still leads on.
    links TEXT,
    -- ok, error
    status TEXT NOT NULL,
    error_code TEXT,
    http_status BIGINT,
    error TEXT,
    fetched_at BIGINT,
    seen_generation BIGINT NOT NULL,
    UNIQUE (source_id, url)
);
CREATE INDEX knowledge_pages_workspace ON knowledge_pages (workspace_id);

CREATE TABLE knowledge_chunks (
    id TEXT PRIMARY KEY,
    page_id TEXT NOT NULL REFERENCES knowledge_pages(id) ON DELETE CASCADE,
    source_id TEXT NOT NULL,
    workspace_id TEXT NOT NULL,
    position BIGINT NOT NULL,
    -- The page's URL with the section's #fragment, when it has one.
    url TEXT NOT NULL,
    title TEXT NOT NULL,
    section TEXT NOT NULL,
    text TEXT NOT NULL,
    language TEXT NOT NULL,
    -- An embedding (base64 of little-endian f32) and the model that made it.
    embedding TEXT,
    embedding_model TEXT
);
CREATE INDEX knowledge_chunks_workspace ON knowledge_chunks (workspace_id, id);
CREATE INDEX knowledge_chunks_page ON knowledge_chunks (page_id);

CREATE TABLE knowledge_gaps (
    id TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
    conversation_id TEXT NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    external_user_id TEXT NOT NULL,
    -- The visitor's question, redacted as transcripts are.
    question TEXT NOT NULL,
    -- no_results, not_cited
    reason TEXT NOT NULL,
    -- The visitor's language (how the question is read to group it).
    language TEXT NOT NULL,
    created_at BIGINT NOT NULL
);
CREATE INDEX knowledge_gaps_workspace ON knowledge_gaps (workspace_id, created_at);

-- Moves whenever a workspace's chunks change: replicas rebuild their index.
ALTER TABLE workspaces ADD COLUMN knowledge_revision BIGINT NOT NULL DEFAULT 0;
-- 1: questions about the host are answered only from its sources and tools.
ALTER TABLE workspaces ADD COLUMN knowledge_only BIGINT NOT NULL DEFAULT 0;
-- A reply's sources (JSON [{url, title, section}]), when it used knowledge.
ALTER TABLE messages ADD COLUMN sources TEXT;
