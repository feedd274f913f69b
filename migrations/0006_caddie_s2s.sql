-- Server-to-server calls from the hub (caddie-tool-contract-ct1.md §5):
-- each nonce is kept until its timestamp can no longer be accepted, so a
-- replay fails — also after a restart.
CREATE TABLE caddie_nonces (
    nonce      TEXT PRIMARY KEY,
    seen_at    BIGINT NOT NULL,
    expires_at BIGINT NOT NULL
);

-- The per-assignment sequence of status reports.
ALTER TABLE caddie_links ADD COLUMN status_seq BIGINT NOT NULL DEFAULT 0;

-- Status reports the hub has not acknowledged yet, retried with backoff in
-- `seq` order per assignment.
CREATE TABLE caddie_status_queue (
    id            TEXT PRIMARY KEY,
    assignment_id TEXT NOT NULL,
    seq           BIGINT NOT NULL,
    body          TEXT NOT NULL,
    attempts      BIGINT NOT NULL,
    next_at       BIGINT NOT NULL,
    created_at    BIGINT NOT NULL
);

CREATE INDEX caddie_status_queue_due ON caddie_status_queue (next_at);
