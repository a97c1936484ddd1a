CREATE TABLE incident_alerts_with_rowid (
    incident_id TEXT NOT NULL REFERENCES incidents (id) ON DELETE CASCADE,
    dedup_key   TEXT NOT NULL,
    status      TEXT NOT NULL CHECK (status IN ('firing', 'resolved')),
    updated_at  TIMESTAMP NOT NULL,
    PRIMARY KEY (incident_id, dedup_key)
);
INSERT INTO incident_alerts_with_rowid (incident_id, dedup_key, status, updated_at)
    SELECT incident_id, dedup_key, status, updated_at FROM incident_alerts;
DROP TABLE incident_alerts;
ALTER TABLE incident_alerts_with_rowid RENAME TO incident_alerts;

DROP TRIGGER incidents_need_a_group;
DROP INDEX incidents_one_open_per_group;
DROP INDEX incidents_by_group;
ALTER TABLE incidents DROP COLUMN group_id;
DROP TABLE incident_groups;
CREATE UNIQUE INDEX incidents_one_open_per_group ON incidents (group_hash) WHERE state = 'open';
CREATE INDEX incidents_by_group ON incidents (group_hash, created_at);
