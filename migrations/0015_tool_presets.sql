-- Tool-host presets the operator names (PUT /v1/tool-presets/{name}): a
-- base URL and a secret (sealed with the server's key), which a Caddie
-- assignment's frozen config picks by name ("assistant": {"tools": name}).
-- An integration made from a preset remembers it, and follows its changes.
CREATE TABLE tool_presets (
    name          TEXT PRIMARY KEY,
    base_url      TEXT NOT NULL,
    secret_enc    TEXT NOT NULL,
    allowed_tools TEXT NOT NULL,
    updated_at    BIGINT NOT NULL
);
ALTER TABLE integrations ADD COLUMN preset TEXT;
