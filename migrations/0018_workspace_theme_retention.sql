-- A workspace's default widget look (JSON: mode, accent, radius, font;
-- a host page's own `init` options win) and how long its conversations
-- are kept (days since their last message; null keeps them).
ALTER TABLE workspaces ADD COLUMN theme TEXT NOT NULL DEFAULT '{}';
ALTER TABLE workspaces ADD COLUMN retention_days BIGINT;
