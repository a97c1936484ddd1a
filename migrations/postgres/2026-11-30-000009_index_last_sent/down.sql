DROP INDEX outbox_emails_last_sent;
