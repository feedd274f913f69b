-- Every event of a turn's stream, numbered, kept a while after the turn
-- ended: a client that lost its connection resumes from the last one it
-- saw (GET /v1/turns/{id}/events with Last-Event-ID), on any replica.
CREATE TABLE turn_events (
    turn_id    TEXT NOT NULL,
    seq        BIGINT NOT NULL,
    kind       TEXT NOT NULL,
    data       TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (turn_id, seq)
);
