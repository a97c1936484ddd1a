-- The claim's order (`next_attempt_at`, then `id`) read from the index, so that a claim
-- of one email costs a lookup, not a sort of every email queued at the same time.
CREATE INDEX outbox_emails_claim ON outbox_emails (state, next_attempt_at, id);
DROP INDEX outbox_emails_due;
CREATE INDEX chat_messages_claim ON chat_messages (state, next_attempt_at, id);
DROP INDEX chat_messages_due;
