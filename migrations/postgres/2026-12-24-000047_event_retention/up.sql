-- Retention (`events.keep_days`, `services::retention`): an incident whose last event
-- is older than that, and that has no COE, keeps what its page shows of its events
-- (`digest`, JSON: the alerts collapsed, what each alert said) and drops the events
-- themselves; `events_pruned_at` says when. Its counts, times and alerts stay.
ALTER TABLE incidents ADD COLUMN digest TEXT;
ALTER TABLE incidents ADD COLUMN events_pruned_at TIMESTAMP;
-- The sweep finds the next incidents to prune, oldest first, without reading the rest.
CREATE INDEX incidents_to_prune ON incidents (updated_at) WHERE events_pruned_at IS NULL;
