-- Assistant test runs (issue #46): a suite run against the workspace's
-- model, prompt, knowledge and tools, its report kept per workspace.
CREATE TABLE test_runs (
    id TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
    suite_name TEXT NOT NULL,
    -- The suite as run (JSON).
    suite TEXT NOT NULL,
    -- The model named for the run, if any (else the workspace's).
    model TEXT,
    -- running, passed, failed, error
    status TEXT NOT NULL,
    cases_total BIGINT NOT NULL,
    passed BIGINT NOT NULL DEFAULT 0,
    failed BIGINT NOT NULL DEFAULT 0,
    -- The report so far (JSON): the cases done, then the whole run.
    report TEXT,
    error TEXT,
    -- The replica running it, and until when it counts as alive.
    lease_owner TEXT,
    lease_until BIGINT NOT NULL DEFAULT 0,
    created_at BIGINT NOT NULL,
    finished_at BIGINT
);
CREATE INDEX test_runs_workspace ON test_runs (workspace_id, created_at);

-- A test run's conversations: never listed with the visitors' (and
-- erased when the run's case ends).
ALTER TABLE conversations ADD COLUMN test_run_id TEXT;
