CREATE INDEX chat_messages_due ON chat_messages (state, next_attempt_at);
DROP INDEX chat_messages_claim;
CREATE INDEX outbox_emails_due ON outbox_emails (state, next_attempt_at);
DROP INDEX outbox_emails_claim;
