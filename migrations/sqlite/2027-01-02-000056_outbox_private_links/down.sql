ALTER TABLE outbox_emails DROP COLUMN private_link;
