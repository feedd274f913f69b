-- One running assistant test run per workspace, whatever two replicas do
-- at once: a second start meets this index and is told a run goes on.
CREATE UNIQUE INDEX test_runs_one_running ON test_runs (workspace_id) WHERE status = 'running';
