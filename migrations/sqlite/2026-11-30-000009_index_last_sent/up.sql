-- Each sweep asks, per kind, for the latest key of every recipient (when they last
-- heard): answered from this index alone instead of a scan of the outbox.
CREATE INDEX outbox_emails_last_sent ON outbox_emails (kind, recipient, dedup_key);
