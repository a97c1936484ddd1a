-- A COE's summary for customers, published once the COE is approved: a public,
-- read-only page at an unguessable address (`token`), revocable. `body` is the
-- section's text as published. One row per COE; publishing again after a revoke
-- gives a new address.
CREATE TABLE publications (
    coe_id               TEXT PRIMARY KEY NOT NULL REFERENCES coes (id) ON DELETE CASCADE,
    token                TEXT NOT NULL,
    body                 TEXT NOT NULL,
    statuspage_incident  TEXT,
    published_by         TEXT NOT NULL,
    published_at         TIMESTAMP NOT NULL,
    revoked_by           TEXT,
    revoked_at           TIMESTAMP
);
CREATE UNIQUE INDEX publications_by_token ON publications (token);
