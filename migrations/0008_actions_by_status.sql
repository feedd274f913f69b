-- Counting the actions still open or executing (the pending-actions
-- metric, the sweep of interrupted executions) without reading them all.
CREATE INDEX actions_by_status ON actions (status, expires_at);
