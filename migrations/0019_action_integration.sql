-- Where an action was previewed: the integration's base URL and version
-- (its connection time), so an Apply runs only against the same one.
ALTER TABLE actions ADD COLUMN integration_url TEXT;
ALTER TABLE actions ADD COLUMN integration_version BIGINT;
