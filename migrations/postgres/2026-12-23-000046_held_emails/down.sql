DROP TABLE database_marks;
-- Refused while an email is held or dropped: send or drop them first.
ALTER TABLE outbox_emails DROP CONSTRAINT outbox_emails_state_check;
ALTER TABLE outbox_emails ADD CONSTRAINT outbox_emails_state_check
    CHECK (state IN ('pending', 'sending', 'sent', 'failed'));
DELETE FROM outbox_counts WHERE state IN ('held', 'dropped');
