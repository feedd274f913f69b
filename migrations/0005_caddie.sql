-- Launched from Caddie (caddie-tool-contract-ct1.md). `caddie_links` maps an
-- assignment to the assistant space (a workspace) made for it, with the
-- hub's frozen config, its participants and its stage rail (a read-only
-- mirror). Launch tokens are burnt by their `jti` (a unique key: no
-- check-then-insert race); `caddie_launch_ctx` is display context only.
CREATE TABLE caddie_links (
    assignment_id   TEXT PRIMARY KEY,
    workspace_id    TEXT NOT NULL REFERENCES workspaces (id),
    project_id      TEXT NOT NULL,
    project_name    TEXT NOT NULL,
    config          TEXT NOT NULL,
    participants    TEXT NOT NULL,
    participants_at BIGINT NOT NULL,
    stages          TEXT NOT NULL,
    return_url      TEXT,
    created_at      BIGINT NOT NULL,
    updated_at      BIGINT NOT NULL
);

CREATE UNIQUE INDEX caddie_links_by_workspace ON caddie_links (workspace_id);

CREATE TABLE caddie_consumed_jti (
    jti         TEXT PRIMARY KEY,
    consumed_at BIGINT NOT NULL,
    expires_at  BIGINT NOT NULL
);

CREATE TABLE caddie_launch_ctx (
    id            TEXT PRIMARY KEY,
    assignment_id TEXT NOT NULL,
    project_slug  TEXT NOT NULL,
    project_name  TEXT NOT NULL,
    stage_label   TEXT NOT NULL,
    return_url    TEXT NOT NULL,
    sub           TEXT NOT NULL,
    jti           TEXT NOT NULL,
    token_exp     BIGINT NOT NULL,
    created_at    BIGINT NOT NULL,
    expires_at    BIGINT NOT NULL
);

-- The assistant's own sign-in: sessions (the cookie holds a random token,
-- the table its SHA-256), and OIDC flows in progress (state → PKCE verifier).
CREATE TABLE user_sessions (
    token_hash TEXT PRIMARY KEY,
    username   TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL
);

CREATE INDEX user_sessions_by_username ON user_sessions (username);

CREATE TABLE oidc_flows (
    state       TEXT PRIMARY KEY,
    verifier    TEXT NOT NULL,
    nonce       TEXT NOT NULL,
    next_path   TEXT NOT NULL,
    interactive BIGINT NOT NULL,
    created_at  BIGINT NOT NULL
);

-- Who may use an assistant space. A launch-provisioned grant came from a
-- Caddie launch (§4) and is what revocation and participant diffs drop.
CREATE TABLE space_grants (
    workspace_id       TEXT NOT NULL REFERENCES workspaces (id),
    username           TEXT NOT NULL,
    level              TEXT NOT NULL,
    launch_provisioned BIGINT NOT NULL,
    assignment_id      TEXT,
    created_at         BIGINT NOT NULL,
    PRIMARY KEY (workspace_id, username)
);

CREATE TABLE audit_log (
    id           TEXT PRIMARY KEY,
    at           BIGINT NOT NULL,
    actor        TEXT NOT NULL,
    action       TEXT NOT NULL,
    workspace_id TEXT,
    username     TEXT,
    detail       TEXT NOT NULL
);
