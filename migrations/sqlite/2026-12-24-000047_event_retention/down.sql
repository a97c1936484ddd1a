DROP INDEX incidents_to_prune;
ALTER TABLE incidents DROP COLUMN events_pruned_at;
ALTER TABLE incidents DROP COLUMN digest;
