-- The audit trail's filters (GET /v1/audit): the tool an entry is about
-- and its outcome, as columns; and the workspace's entries newest first.
ALTER TABLE audit_log ADD COLUMN tool TEXT;
ALTER TABLE audit_log ADD COLUMN outcome TEXT;
CREATE INDEX audit_log_workspace_at ON audit_log (workspace_id, at, id);
