-- Stale previews (our extension): a fresh preview of an action the host
-- found stale names the action it replaces.
ALTER TABLE actions ADD COLUMN replaces TEXT;

-- The Acme Bistro demo host: dishes the kitchen has marked sold out at
-- run time (CA_BISTRO_SOLD_OUT stays sold out on top of these)...
CREATE TABLE bistro_sold_out (
    item  TEXT PRIMARY KEY,
    since BIGINT NOT NULL
);

-- ...and what it previewed, per diner and tool call, so that an execute
-- whose preview no longer holds answers 409 stale instead of running.
CREATE TABLE bistro_previews (
    customer_key TEXT NOT NULL,
    call_id      TEXT NOT NULL,
    tool         TEXT NOT NULL,
    preview      TEXT NOT NULL,
    created_at   BIGINT NOT NULL,
    PRIMARY KEY (customer_key, call_id)
);
CREATE INDEX bistro_previews_by_age ON bistro_previews (created_at);
