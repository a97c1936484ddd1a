DROP TABLE timeline_hosts;
DROP INDEX timeline_entries_one_per_alert;
ALTER TABLE timeline_entries DROP COLUMN last_at;
ALTER TABLE timeline_entries DROP COLUMN hosts;
ALTER TABLE timeline_entries DROP COLUMN occurrences;
ALTER TABLE timeline_entries DROP COLUMN alert_name;
ALTER TABLE timeline_entries DROP COLUMN alert_key;
