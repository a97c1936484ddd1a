ALTER TABLE service_owners DROP COLUMN depends_on;
