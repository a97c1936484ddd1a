-- coe: stop every replica before this migration runs
-- Group and occurrence hashes as the 32 bytes of their SHA-256, not 64 hexadecimal
-- characters: two of the three indexes every new incident writes to, and the one
-- every new event writes to, are on these random values; halving their entries keeps
-- more of those indexes in memory and writes fewer pages per commit. SQLite cannot
-- change a column's type: a new column takes the converted values and the old name.
-- (The DEFAULT only satisfies ADD COLUMN ... NOT NULL; every row is given a value.)
-- The CHECK refuses the text an older binary still running would write: SQLite would
-- take it, never match it, and open a second incident for the group.
DROP INDEX incidents_one_open_per_group;
DROP INDEX incidents_by_group;
ALTER TABLE incidents ADD COLUMN group_digest BLOB NOT NULL DEFAULT x''
    CHECK (typeof(group_digest) = 'blob');
UPDATE incidents SET group_digest = unhex(group_hash);
ALTER TABLE incidents DROP COLUMN group_hash;
ALTER TABLE incidents RENAME COLUMN group_digest TO group_hash;
CREATE UNIQUE INDEX incidents_one_open_per_group ON incidents (group_hash) WHERE state = 'open';
CREATE INDEX incidents_by_group ON incidents (group_hash, created_at);

DROP INDEX failure_events_one_per_occurrence;
ALTER TABLE failure_events ADD COLUMN occurrence_digest BLOB NOT NULL DEFAULT x''
    CHECK (typeof(occurrence_digest) = 'blob');
UPDATE failure_events SET occurrence_digest = unhex(occurrence_hash);
ALTER TABLE failure_events DROP COLUMN occurrence_hash;
ALTER TABLE failure_events RENAME COLUMN occurrence_digest TO occurrence_hash;
CREATE UNIQUE INDEX failure_events_one_per_occurrence ON failure_events (occurrence_hash);
