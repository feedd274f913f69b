-- The kinds of attachment a workspace takes (issue #32): a JSON array of
-- media types, within the server's allowlist (PNG, JPEG, WebP and GIF
-- images, PDF, plain text); NULL takes every one of them.
ALTER TABLE workspaces ADD COLUMN attachment_types TEXT;
