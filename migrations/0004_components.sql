-- Rich results (assistant-api.md §3, the `component` event): a tool result's
-- `component`, shown with the assistant's answer. `message_id` is the tool
-- row that carried it; `tools` (a JSON array) names the tools the
-- component's own buttons may call. When a later result refreshes a kind,
-- every component of that kind in the conversation takes the new `data`.
CREATE TABLE components (
    id              TEXT PRIMARY KEY,
    conversation_id TEXT NOT NULL REFERENCES conversations (id),
    message_id      TEXT NOT NULL,
    call_id         TEXT NOT NULL,
    kind            TEXT NOT NULL,
    data            TEXT NOT NULL,
    tools           TEXT NOT NULL,
    created_at      BIGINT NOT NULL,
    updated_at      BIGINT NOT NULL
);

CREATE INDEX components_by_conversation ON components (conversation_id, kind);
