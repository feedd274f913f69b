-- A workspace's sources version: one higher at every change of its
-- integrations (connect, change, removal, a preset they follow). It is read
-- with the workspace on every call, so a replica knows at once whether the
-- sources it opened for an earlier turn are still the workspace's.
ALTER TABLE workspaces ADD COLUMN sources_version BIGINT NOT NULL DEFAULT 0;
