ALTER TABLE service_owners DROP COLUMN customer_name;
DROP TABLE summary_changes;
-- Each COE's newest publication only.
DELETE FROM publications p
    WHERE published_at < (SELECT max(published_at) FROM publications q WHERE q.coe_id = p.coe_id);
DROP INDEX publications_live;
DROP INDEX publications_by_coe;
ALTER TABLE publications DROP COLUMN title, DROP COLUMN updated_by, DROP COLUMN updated_at;
ALTER TABLE publications DROP CONSTRAINT publications_pkey;
ALTER TABLE publications ADD PRIMARY KEY (coe_id);
CREATE UNIQUE INDEX publications_by_token ON publications (token);
