-- coe: stop every replica before this migration runs
-- Group and occurrence hashes as the 32 bytes of their SHA-256, not 64 hexadecimal
-- characters: two of the three indexes every new incident writes to, and the one
-- every new event writes to, are on these random values; halving their entries keeps
-- more of those indexes in memory and writes fewer pages per commit. The indexes on
-- these columns are rebuilt by the type change.
ALTER TABLE incidents ALTER COLUMN group_hash TYPE BYTEA USING decode(group_hash, 'hex');
ALTER TABLE failure_events ALTER COLUMN occurrence_hash TYPE BYTEA USING decode(occurrence_hash, 'hex');
