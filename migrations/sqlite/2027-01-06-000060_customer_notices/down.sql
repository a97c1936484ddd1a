ALTER TABLE service_owners DROP COLUMN customer_name;
DROP TABLE summary_changes;
CREATE TABLE publications_one (
    coe_id               TEXT PRIMARY KEY NOT NULL REFERENCES coes (id) ON DELETE CASCADE,
    token                TEXT NOT NULL,
    body                 TEXT NOT NULL,
    statuspage_incident  TEXT,
    published_by         TEXT NOT NULL,
    published_at         TIMESTAMP NOT NULL,
    revoked_by           TEXT,
    revoked_at           TIMESTAMP
);
-- Each COE's newest publication.
INSERT INTO publications_one
    SELECT coe_id, token, body, statuspage_incident, published_by, published_at,
        revoked_by, revoked_at
    FROM publications p
    WHERE published_at = (SELECT max(published_at) FROM publications q WHERE q.coe_id = p.coe_id)
    GROUP BY coe_id;
DROP TABLE publications;
ALTER TABLE publications_one RENAME TO publications;
CREATE UNIQUE INDEX publications_by_token ON publications (token);
