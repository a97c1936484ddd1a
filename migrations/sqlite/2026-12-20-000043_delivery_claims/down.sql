ALTER TABLE chat_messages DROP COLUMN claimed_by;
ALTER TABLE outbox_emails DROP COLUMN claimed_by;
