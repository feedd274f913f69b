-- Pending actions (assistant-api.md §3, "Pending actions"): a create, update
-- or delete the host previewed, frozen until the user applies or cancels it.
-- `status` moves only by conditional UPDATEs, so two tabs or two replicas
-- cannot both execute one action.
CREATE TABLE actions (
    id                     TEXT PRIMARY KEY,
    conversation_id        TEXT NOT NULL REFERENCES conversations (id),
    workspace_id           TEXT NOT NULL,
    external_user_id       TEXT NOT NULL,
    permissions            TEXT NOT NULL,
    call_id                TEXT NOT NULL,
    tool                   TEXT NOT NULL,
    verb                   TEXT NOT NULL,
    arguments              TEXT NOT NULL,
    preview                TEXT NOT NULL,
    status                 TEXT NOT NULL,
    confirmations_required BIGINT NOT NULL,
    created_at             BIGINT NOT NULL,
    expires_at             BIGINT NOT NULL,
    updated_at             BIGINT NOT NULL
);

CREATE INDEX actions_by_conversation ON actions (conversation_id, status);
