-- Attachments (issue #32): a file a user uploaded, kept in the object store
-- under `object_key` after its type was sniffed from its bytes and an
-- image was encoded again. It is its user's own: every read names the
-- workspace and the user. `size` in bytes as kept, `sha256` of the bytes
-- as kept (hex).
CREATE TABLE attachments (
    id               TEXT PRIMARY KEY,
    workspace_id     TEXT NOT NULL,
    external_user_id TEXT NOT NULL,
    name             TEXT NOT NULL,
    media_type       TEXT NOT NULL,
    size             BIGINT NOT NULL,
    sha256           TEXT NOT NULL,
    object_key       TEXT NOT NULL,
    created_at       BIGINT NOT NULL
);
CREATE INDEX attachments_owner ON attachments (workspace_id, external_user_id);
CREATE INDEX attachments_created ON attachments (created_at);
