-- Limits every replica agrees on: fixed-window counters (turns per user,
-- per client address, per workspace; component calls), tokens used per
-- day, and one running turn per conversation.
CREATE TABLE rate_windows (
    key          TEXT NOT NULL,
    window_start BIGINT NOT NULL,
    count        BIGINT NOT NULL,
    PRIMARY KEY (key, window_start)
);

CREATE TABLE token_usage (
    key    TEXT NOT NULL,
    day    BIGINT NOT NULL,
    tokens BIGINT NOT NULL,
    PRIMARY KEY (key, day)
);

-- Turns a crashed process left running cannot hold their conversation.
UPDATE turns SET finished_at = started_at, stop_reason = 'interrupted' WHERE finished_at IS NULL;
CREATE UNIQUE INDEX one_running_turn ON turns (conversation_id) WHERE finished_at IS NULL;
