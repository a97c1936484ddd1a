-- A failure reported by a person from the pages ("pull the cord"): its incident has
-- source `manual` and names who reported it.
ALTER TABLE incidents ADD COLUMN reported_by TEXT;
