-- The browser features a workspace lets MCP Apps have (issue #31): a JSON
-- array of Permissions Policy features (`camera`, `microphone`,
-- `geolocation`, `clipboard-write`). An app gets those its resource asks
-- for in `_meta.ui.permissions` and this list holds; none by default.
ALTER TABLE workspaces ADD COLUMN app_permissions TEXT NOT NULL DEFAULT '[]';
