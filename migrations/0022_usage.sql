-- What each workspace used per UTC day (`day`: days since 1970-01-01), by
-- metric: turns, input_tokens, output_tokens, tool_calls, and
-- refused:<limit> for each limit that turned something away. Replicas
-- count in memory and add their counts here in batches. No user is named:
-- erasure and retention leave these sums alone; rows older than 400 days go.
CREATE TABLE usage_days (
    workspace_id TEXT NOT NULL,
    day          BIGINT NOT NULL,
    metric       TEXT NOT NULL,
    count        BIGINT NOT NULL,
    PRIMARY KEY (workspace_id, day, metric)
);
