DROP INDEX incidents_at_policy;
