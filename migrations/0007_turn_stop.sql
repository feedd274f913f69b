-- A stop asked of any replica: the replica running the turn polls for it.
ALTER TABLE turns ADD COLUMN stop_requested BIGINT NOT NULL DEFAULT 0;

CREATE INDEX turns_stop_requested ON turns (stop_requested, finished_at);
