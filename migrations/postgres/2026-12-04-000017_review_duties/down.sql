ALTER TABLE coes DROP COLUMN reviewer_named_by;
ALTER TABLE coes DROP COLUMN submitted_by;
