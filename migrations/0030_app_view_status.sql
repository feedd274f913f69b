-- An MCP App is shown when its tool is called, not when it has answered
-- (issue #31): the app gets the tool's input at once, then its result, or
-- `ui/notifications/tool-cancelled` when the turn is stopped first.
-- `status`: `running` (no result yet; its component is not under a message
-- until the tool answers), `done` or `cancelled` (with the reason the app
-- is told). Views from before are `done`.
ALTER TABLE app_views ADD COLUMN status TEXT NOT NULL DEFAULT 'done';
ALTER TABLE app_views ADD COLUMN cancel_reason TEXT;
