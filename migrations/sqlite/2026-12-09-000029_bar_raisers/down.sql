DROP INDEX coes_bar_raiser;
ALTER TABLE coes DROP COLUMN approved_by;
ALTER TABLE coes DROP COLUMN bar_raiser_assigned_at;
ALTER TABLE coes DROP COLUMN bar_raiser_email;
ALTER TABLE people DROP COLUMN bar_raiser;
