ALTER TABLE corrective_actions DROP COLUMN verified_by;
ALTER TABLE corrective_actions DROP COLUMN verified_at;
