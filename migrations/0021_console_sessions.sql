-- Console sign-ins: a session per browser, found by the hash of its
-- cookie. It keeps the credential it signed in with, sealed with the
-- server's key, to act through the public API on the user's behalf: a
-- workspace's api key, or the operator's admin token (workspace_id NULL).
CREATE TABLE console_sessions (
    token_hash    TEXT PRIMARY KEY,
    workspace_id  TEXT,
    sealed_key    TEXT NOT NULL,
    created_at    BIGINT NOT NULL,
    expires_at    BIGINT NOT NULL
);
CREATE INDEX console_sessions_by_expiry ON console_sessions (expires_at);
