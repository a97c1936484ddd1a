ALTER TABLE why_chains DROP COLUMN factor;
