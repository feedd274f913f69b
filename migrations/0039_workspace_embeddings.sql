-- A workspace's own embeddings model (issue #45): with its own chat model's
-- endpoint and key, the model that gives its knowledge chunks their
-- vectors (hybrid search). None: the server's embeddings model, if any.
ALTER TABLE workspace_models ADD COLUMN embeddings_model TEXT;
