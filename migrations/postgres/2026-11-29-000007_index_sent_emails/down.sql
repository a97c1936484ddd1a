DROP INDEX outbox_emails_sent;
