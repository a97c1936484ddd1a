-- Retention (`services::retention`) keeps the events a COE's timeline points at, even
-- of an incident no longer attached to it (an entry someone edited stays when its
-- incident is detached): it asks by event, so the entries are indexed by event.
CREATE INDEX timeline_entries_by_event ON timeline_entries (event_id) WHERE event_id IS NOT NULL;
