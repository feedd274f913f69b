-- Rotation with overlap (POST /v1/workspace/embed-secret/rotate and
-- /api-key/rotate): the previous embed secret (sealed) and api key (hashed)
-- keep working until their `_until` (unix ms), then are refused.
ALTER TABLE workspaces ADD COLUMN embed_secret_prev_enc TEXT;
ALTER TABLE workspaces ADD COLUMN embed_secret_prev_until BIGINT;
ALTER TABLE workspaces ADD COLUMN api_key_prev_hash TEXT;
ALTER TABLE workspaces ADD COLUMN api_key_prev_until BIGINT;
CREATE INDEX workspaces_api_key_prev_hash ON workspaces (api_key_prev_hash);
