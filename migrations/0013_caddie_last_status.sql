-- What the last status report of an assignment said (its state, counts,
-- waiting actors and summary, as JSON): a reconcile that finds the space
-- changed since answers with the next `seq`, so a hub that drops
-- `seq <= last` does not keep a stale state.
ALTER TABLE caddie_links ADD COLUMN last_status TEXT NOT NULL DEFAULT '';
