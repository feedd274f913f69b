-- One schema for SQLite and PostgreSQL: TEXT ids, BIGINT unix milliseconds,
-- JSON stored as TEXT. Secrets are stored encrypted (the *_enc columns) or
-- hashed (api_key_hash), never in the clear.

CREATE TABLE workspaces (
    id               TEXT PRIMARY KEY,
    name             TEXT NOT NULL,
    allowed_origins  TEXT NOT NULL,
    api_key_hash     TEXT NOT NULL UNIQUE,
    embed_secret_enc TEXT NOT NULL,
    created_at       BIGINT NOT NULL
);

CREATE TABLE integrations (
    workspace_id  TEXT NOT NULL REFERENCES workspaces (id),
    provider      TEXT NOT NULL,
    base_url      TEXT NOT NULL,
    secret_enc    TEXT NOT NULL,
    allowed_tools TEXT NOT NULL,
    builtin       BIGINT NOT NULL DEFAULT 0,
    created_at    BIGINT NOT NULL,
    PRIMARY KEY (workspace_id, provider)
);

CREATE TABLE conversations (
    id               TEXT PRIMARY KEY,
    workspace_id     TEXT NOT NULL REFERENCES workspaces (id),
    external_user_id TEXT NOT NULL,
    title            TEXT NOT NULL,
    created_at       BIGINT NOT NULL,
    updated_at       BIGINT NOT NULL
);

CREATE INDEX conversations_by_owner ON conversations (workspace_id, external_user_id, updated_at);

-- The transcript as the model saw it, in order. `role` is user, assistant or
-- tool; an assistant row that called tools carries them as JSON in
-- `tool_calls`; a tool row answers `tool_call_id`. `cards` holds the
-- sanitized display cards shown with an assistant reply.
CREATE TABLE messages (
    id              TEXT PRIMARY KEY,
    conversation_id TEXT NOT NULL REFERENCES conversations (id),
    seq             BIGINT NOT NULL,
    role            TEXT NOT NULL,
    content         TEXT NOT NULL,
    tool_calls      TEXT,
    tool_call_id    TEXT,
    cards           TEXT,
    created_at      BIGINT NOT NULL,
    UNIQUE (conversation_id, seq)
);

CREATE TABLE turns (
    id              TEXT PRIMARY KEY,
    conversation_id TEXT NOT NULL REFERENCES conversations (id),
    stop_reason     TEXT,
    iterations      BIGINT NOT NULL DEFAULT 0,
    tokens          BIGINT NOT NULL DEFAULT 0,
    started_at      BIGINT NOT NULL,
    finished_at     BIGINT
);
