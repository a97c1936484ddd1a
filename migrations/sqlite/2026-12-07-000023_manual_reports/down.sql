ALTER TABLE incidents DROP COLUMN reported_by;
