DROP TABLE outbox_emails;
