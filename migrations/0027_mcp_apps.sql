-- MCP Apps (issue #31). An app shown in a conversation is a component of
-- kind `mcp-app` (a kind no host can name: kinds of host components have
-- no dash); its view keeps which server and tool it came from, the tool's
-- input and its whole result, so a reload shows it again without calling
-- the tool.
CREATE TABLE app_views (
    component_id        TEXT PRIMARY KEY,
    conversation_id     TEXT NOT NULL,
    workspace_id        TEXT NOT NULL,
    external_user_id    TEXT NOT NULL,
    integration         TEXT NOT NULL,
    integration_version BIGINT NOT NULL,
    tool                TEXT NOT NULL,
    resource_uri        TEXT NOT NULL,
    input               TEXT NOT NULL,
    result              TEXT NOT NULL,
    created_at          BIGINT NOT NULL
);
CREATE INDEX app_views_conversation ON app_views (conversation_id);
-- What the apps of a conversation told the model (`ui/update-model-context`,
-- the last one), and whether the user let apps write in their name
-- (`ui/message`, asked the first time).
CREATE TABLE app_states (
    conversation_id  TEXT PRIMARY KEY,
    model_context    TEXT,
    messages_allowed BIGINT NOT NULL DEFAULT 0,
    updated_at       BIGINT NOT NULL
);
