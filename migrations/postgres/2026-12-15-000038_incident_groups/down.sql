DROP INDEX incidents_one_open_per_group;
DROP INDEX incidents_by_group;
ALTER TABLE incidents DROP COLUMN group_id;
DROP TABLE incident_groups;
CREATE UNIQUE INDEX incidents_one_open_per_group ON incidents (group_hash) WHERE state = 'open';
CREATE INDEX incidents_by_group ON incidents (group_hash, created_at);
