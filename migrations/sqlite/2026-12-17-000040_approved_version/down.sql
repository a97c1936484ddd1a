ALTER TABLE coes DROP COLUMN approved_version;
