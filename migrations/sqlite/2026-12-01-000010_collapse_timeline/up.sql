-- Events of one alert share one timeline entry per COE ("fired 412 times between
-- 10:02 and 10:40 on 37 hosts"), updated as events arrive, so that an alert storm
-- leaves a readable COE. `alert_key` names the alert and kind (NULL for entries
-- people wrote or edited); `alert_name` is what the text calls it.
ALTER TABLE timeline_entries ADD COLUMN alert_key TEXT;
ALTER TABLE timeline_entries ADD COLUMN alert_name TEXT;
ALTER TABLE timeline_entries ADD COLUMN occurrences INTEGER NOT NULL DEFAULT 1;
ALTER TABLE timeline_entries ADD COLUMN hosts INTEGER NOT NULL DEFAULT 1;
ALTER TABLE timeline_entries ADD COLUMN last_at TIMESTAMP;
CREATE UNIQUE INDEX timeline_entries_one_per_alert ON timeline_entries (coe_id, alert_key);

-- The hosts an entry's events came from, so that each host is counted once.
CREATE TABLE timeline_hosts (
    entry_id TEXT NOT NULL,
    host TEXT NOT NULL,
    PRIMARY KEY (entry_id, host)
);
