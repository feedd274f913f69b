-- A user's thumbs up or down on a reply, with an optional comment: one per
-- reply (its last assistant message), changed or taken back by its user,
-- read by the host through GET /v1/workspace/feedback.
CREATE TABLE message_feedback (
    message_id       TEXT PRIMARY KEY,
    conversation_id  TEXT NOT NULL,
    workspace_id     TEXT NOT NULL,
    external_user_id TEXT NOT NULL,
    rating           TEXT NOT NULL,
    comment          TEXT,
    updated_at       BIGINT NOT NULL
);
CREATE INDEX message_feedback_by_workspace ON message_feedback (workspace_id, updated_at);
CREATE INDEX message_feedback_by_conversation ON message_feedback (conversation_id);
