-- Attachments sent with a user's message (issue #32): which, in the order
-- the user gave them. `text`: a text attachment's content as the model is
-- given it (bounded), read once when the message is saved.
CREATE TABLE message_attachments (
    message_id    TEXT NOT NULL,
    attachment_id TEXT NOT NULL,
    position      BIGINT NOT NULL,
    text          TEXT,
    PRIMARY KEY (message_id, attachment_id)
);
CREATE INDEX message_attachments_attachment ON message_attachments (attachment_id);
