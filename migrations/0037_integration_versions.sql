-- An integration's version: its workspace's count of connects, one higher
-- at each (it was the connect's time in milliseconds, which two connects
-- in one millisecond shared). A pending action and an app keep the version
-- they were made on; an Apply on another version is refused. The count
-- starts above every version already in use, so none is given again.
ALTER TABLE integrations ADD COLUMN version BIGINT NOT NULL DEFAULT 0;
UPDATE integrations SET version = created_at;
ALTER TABLE workspaces ADD COLUMN integration_version BIGINT NOT NULL DEFAULT 0;
UPDATE workspaces SET integration_version =
    COALESCE((SELECT MAX(created_at) FROM integrations WHERE integrations.workspace_id = workspaces.id), 0);
UPDATE workspaces SET integration_version =
    (SELECT MAX(integration_version) FROM actions WHERE actions.workspace_id = workspaces.id)
    WHERE (SELECT MAX(integration_version) FROM actions WHERE actions.workspace_id = workspaces.id) > integration_version;
UPDATE workspaces SET integration_version =
    (SELECT MAX(integration_version) FROM app_views WHERE app_views.workspace_id = workspaces.id)
    WHERE (SELECT MAX(integration_version) FROM app_views WHERE app_views.workspace_id = workspaces.id) > integration_version;
