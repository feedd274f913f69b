-- Whether a workspace's own model is given the visitor's images as image
-- parts (issue #32): 1 or 0 as the workspace set it; NULL decides by the
-- model's name (the known vision models).
ALTER TABLE workspace_models ADD COLUMN accepts_images BIGINT;
