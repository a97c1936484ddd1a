-- coe: stop every replica before this migration runs
-- Fewer index entries per new alert (issue 29). A group is found by its hash once, in
-- `incident_groups`, which names it by its first incident's id (`group_id`); the
-- incidents' own group indexes (one open incident per group, a group's incidents in
-- order) are on that id. Ids are time-ordered, so a new group's entries go at the end
-- of those two indexes instead of at a random place: of the three random-keyed index
-- entries a new alert wrote (two group hashes, one occurrence hash), two are left.
CREATE TABLE incident_groups (
    group_hash BLOB PRIMARY KEY NOT NULL CHECK (typeof(group_hash) = 'blob'),
    group_id   TEXT NOT NULL
) WITHOUT ROWID;
ALTER TABLE incidents ADD COLUMN group_id TEXT NOT NULL DEFAULT '';
INSERT INTO incident_groups (group_hash, group_id)
    SELECT group_hash, min(id) FROM incidents GROUP BY group_hash;
UPDATE incidents SET group_id =
    (SELECT g.group_id FROM incident_groups g WHERE g.group_hash = incidents.group_hash);
DROP INDEX incidents_one_open_per_group;
DROP INDEX incidents_by_group;
CREATE UNIQUE INDEX incidents_one_open_per_group ON incidents (group_id) WHERE state = 'open';
CREATE INDEX incidents_by_group ON incidents (group_id, created_at);
-- The column's default is only for the rows above: an incident written without its
-- group's name (by a version from before, still running) is refused, not stored where
-- no look-up finds it. (SQLite cannot drop a column's default in place.)
CREATE TRIGGER incidents_need_a_group BEFORE INSERT ON incidents WHEN NEW.group_id = ''
BEGIN
    SELECT RAISE(ABORT, 'incidents.group_id is required (migration 000038)');
END;

-- Alert states in their primary key's B-tree alone (a table with a rowid kept the
-- rows in one B-tree and the key in another: two inserts per new alert).
CREATE TABLE incident_alerts_by_key (
    incident_id TEXT NOT NULL REFERENCES incidents (id) ON DELETE CASCADE,
    dedup_key   TEXT NOT NULL,
    status      TEXT NOT NULL CHECK (status IN ('firing', 'resolved')),
    updated_at  TIMESTAMP NOT NULL,
    PRIMARY KEY (incident_id, dedup_key)
) WITHOUT ROWID;
INSERT INTO incident_alerts_by_key (incident_id, dedup_key, status, updated_at)
    SELECT incident_id, dedup_key, status, updated_at FROM incident_alerts;
DROP TABLE incident_alerts;
ALTER TABLE incident_alerts_by_key RENAME TO incident_alerts;
