-- Back to 64 lowercase hexadecimal characters: the same hashes, as the versions
-- before this migration compute them.
DROP INDEX incidents_one_open_per_group;
DROP INDEX incidents_by_group;
ALTER TABLE incidents ADD COLUMN group_hex TEXT NOT NULL DEFAULT '';
UPDATE incidents SET group_hex = lower(hex(group_hash));
ALTER TABLE incidents DROP COLUMN group_hash;
ALTER TABLE incidents RENAME COLUMN group_hex TO group_hash;
CREATE UNIQUE INDEX incidents_one_open_per_group ON incidents (group_hash) WHERE state = 'open';
CREATE INDEX incidents_by_group ON incidents (group_hash, created_at);

DROP INDEX failure_events_one_per_occurrence;
ALTER TABLE failure_events ADD COLUMN occurrence_hex TEXT NOT NULL DEFAULT '';
UPDATE failure_events SET occurrence_hex = lower(hex(occurrence_hash));
ALTER TABLE failure_events DROP COLUMN occurrence_hash;
ALTER TABLE failure_events RENAME COLUMN occurrence_hex TO occurrence_hash;
CREATE UNIQUE INDEX failure_events_one_per_occurrence ON failure_events (occurrence_hash);
