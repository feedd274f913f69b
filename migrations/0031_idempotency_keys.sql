-- Idempotent sends (issue #34): `POST /v1/chat/turns` with an
-- `Idempotency-Key` header. The first request with a key claims it (this
-- row; the primary key decides across replicas) and names its turn once
-- the turn is claimed; the same key from the same user within 24 hours
-- answers that turn's stream again, the same key with another body is
-- refused. `body_hash`: SHA-256 of the request's JSON as parsed.
CREATE TABLE idempotency_keys (
    workspace_id     TEXT NOT NULL,
    external_user_id TEXT NOT NULL,
    idempotency_key  TEXT NOT NULL,
    body_hash        TEXT NOT NULL,
    turn_id          TEXT,
    created_at       BIGINT NOT NULL,
    PRIMARY KEY (workspace_id, external_user_id, idempotency_key)
);
CREATE INDEX idempotency_keys_created ON idempotency_keys (created_at);
