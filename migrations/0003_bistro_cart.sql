-- The Acme Bistro demo host's carts (acme-bistro-api-contract.md, open
-- question 4 answered server-side): one row per line, per customer — the
-- workspace and the externalUserId the assistant acts for.
CREATE TABLE bistro_cart_lines (
    customer_key TEXT NOT NULL,
    item         TEXT NOT NULL,
    quantity     BIGINT NOT NULL,
    notes        TEXT NOT NULL,
    added_at     BIGINT NOT NULL,
    PRIMARY KEY (customer_key, item)
);
