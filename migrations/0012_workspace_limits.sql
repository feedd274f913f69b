-- A workspace's own limits and budgets (PATCH /v1/workspace), as JSON:
-- each at most the operator's; a missing or null one is the operator's.
ALTER TABLE workspaces ADD COLUMN limits TEXT NOT NULL DEFAULT '{}';
