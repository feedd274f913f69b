-- Which identity provider subject a username belongs to: bound at its
-- first sign-in, after which another subject presenting the same
-- preferred_username is refused (a provider that lets users pick their
-- username must not hand over someone else's grants).
CREATE TABLE caddie_identities (
    username   TEXT PRIMARY KEY,
    issuer     TEXT NOT NULL,
    sub        TEXT NOT NULL,
    created_at BIGINT NOT NULL
);
