-- MCP servers as tool sources beside the Remote Tools host (issue #30).
-- An integration is of a kind: `remote-tools` (provider `generic-rest`, as
-- before) or `mcp` (provider: the name the host gave it). For an MCP
-- server, `base_url` is its Streamable HTTP endpoint and `secret_enc` the
-- headers sent to it (a JSON object, sealed like the host secret, so a key
-- rotation re-seals them too). `trust_annotations` and `verbs` decide how
-- its tools are classified.
ALTER TABLE integrations ADD COLUMN kind TEXT NOT NULL DEFAULT 'remote-tools';
ALTER TABLE integrations ADD COLUMN trust_annotations BIGINT NOT NULL DEFAULT 0;
ALTER TABLE integrations ADD COLUMN verbs TEXT NOT NULL DEFAULT '{}';
-- Which integration previewed an action (NULL: before there were several,
-- the Remote Tools host), and the digest of the tool's definition then: an
-- Apply runs only while the tool is defined the same.
ALTER TABLE actions ADD COLUMN integration TEXT;
ALTER TABLE actions ADD COLUMN tool_digest TEXT;
