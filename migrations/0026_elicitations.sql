-- A tool's request for the user's input while it runs (an MCP server's
-- form-mode elicitation, issue #30). The turn that waits for it polls its
-- row, so the answer may reach any replica. The answer's content is kept
-- only until the waiting turn has read it.
CREATE TABLE elicitations (
    id               TEXT PRIMARY KEY,
    turn_id          TEXT NOT NULL,
    conversation_id  TEXT NOT NULL,
    workspace_id     TEXT NOT NULL,
    external_user_id TEXT NOT NULL,
    call_id          TEXT NOT NULL,
    tool             TEXT NOT NULL,
    fields           TEXT NOT NULL,
    status           TEXT NOT NULL,
    content          TEXT,
    created_at       BIGINT NOT NULL,
    updated_at       BIGINT NOT NULL
);
CREATE INDEX elicitations_conversation ON elicitations (conversation_id);
