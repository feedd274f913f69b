-- Changes an MCP App asks for (issue #31): an app's `tools/call` of a tool
-- that is not a read becomes a pending action like the model's, applied by
-- the visitor in the assistant's chrome around the app. `app_component_id`
-- names the app (its `mcp-app` component) that asked; NULL for the
-- model's. An app's action has no tool call in the conversation: it is
-- never shown as the chat's pending action, never answered to the model,
-- and applied only through the app's own token.
ALTER TABLE actions ADD COLUMN app_component_id TEXT;
