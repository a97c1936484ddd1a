DROP INDEX timeline_entries_by_event;
