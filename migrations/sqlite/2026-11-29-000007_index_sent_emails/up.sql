-- The sweep deletes sent emails older than reminders.keep_sent_days: find them by index.
CREATE INDEX outbox_emails_sent ON outbox_emails (state, sent_at);
