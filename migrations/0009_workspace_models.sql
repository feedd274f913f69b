-- A workspace's own model (PUT /v1/workspace/model): an OpenAI-compatible
-- endpoint, its key sealed like host secrets.
CREATE TABLE workspace_models (
    workspace_id TEXT PRIMARY KEY REFERENCES workspaces (id),
    base_url     TEXT NOT NULL,
    api_key_enc  TEXT NOT NULL,
    model        TEXT NOT NULL,
    updated_at   BIGINT NOT NULL
);
