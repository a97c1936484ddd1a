ALTER TABLE coes DROP COLUMN reviewer_handed_over_at;
ALTER TABLE coes DROP COLUMN reviewer_handed_over_from;
ALTER TABLE coes DROP COLUMN owner_handed_over_at;
ALTER TABLE coes DROP COLUMN owner_handed_over_from;
ALTER TABLE corrective_actions DROP COLUMN handed_over_at;
ALTER TABLE corrective_actions DROP COLUMN handed_over_from;
