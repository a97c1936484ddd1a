-- The services a service depends on, as admins name them in the service map (a JSON
-- list of service names): two incidents close in time whose services depend on one
-- another are probably one outage.
ALTER TABLE service_owners ADD COLUMN depends_on TEXT NOT NULL DEFAULT '[]';
