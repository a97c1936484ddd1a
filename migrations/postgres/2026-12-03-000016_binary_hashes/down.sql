-- Back to 64 lowercase hexadecimal characters: the same hashes, as the versions
-- before this migration compute them.
ALTER TABLE incidents ALTER COLUMN group_hash TYPE TEXT USING encode(group_hash, 'hex');
ALTER TABLE failure_events ALTER COLUMN occurrence_hash TYPE TEXT USING encode(occurrence_hash, 'hex');
