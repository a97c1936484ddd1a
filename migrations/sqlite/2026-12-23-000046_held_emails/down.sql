DROP TABLE database_marks;
-- Refused (the CHECK) while an email is held or dropped: send or drop them first.
CREATE TABLE outbox_emails_new (
    id                TEXT PRIMARY KEY NOT NULL,
    kind              TEXT NOT NULL,
    dedup_key         TEXT NOT NULL UNIQUE,
    recipient         TEXT NOT NULL,
    recipient_name    TEXT,
    subject           TEXT NOT NULL,
    body_text         TEXT NOT NULL,
    body_html         TEXT NOT NULL,
    state             TEXT NOT NULL CHECK (state IN ('pending', 'sending', 'sent', 'failed')),
    attempts          INTEGER NOT NULL DEFAULT 0,
    next_attempt_at   TIMESTAMP NOT NULL,
    lease_until       TIMESTAMP,
    last_error        TEXT,
    created_at        TIMESTAMP NOT NULL,
    updated_at        TIMESTAMP NOT NULL,
    sent_at           TIMESTAMP,
    claimed_by        TEXT,
    unsubscribe_token TEXT
);

INSERT INTO outbox_emails_new (id, kind, dedup_key, recipient, recipient_name, subject, body_text, body_html, state, attempts, next_attempt_at, lease_until, last_error, created_at, updated_at, sent_at, claimed_by, unsubscribe_token)
SELECT id, kind, dedup_key, recipient, recipient_name, subject, body_text, body_html, state, attempts, next_attempt_at, lease_until, last_error, created_at, updated_at, sent_at, claimed_by, unsubscribe_token FROM outbox_emails;
DROP TABLE outbox_emails;
ALTER TABLE outbox_emails_new RENAME TO outbox_emails;
CREATE INDEX outbox_emails_by_created ON outbox_emails (created_at, id);
CREATE INDEX outbox_emails_sent ON outbox_emails (state, sent_at);
CREATE INDEX outbox_emails_last_sent ON outbox_emails (kind, recipient, dedup_key);
CREATE INDEX outbox_emails_claim ON outbox_emails (state, next_attempt_at, id);

CREATE TRIGGER outbox_counts_after_insert AFTER INSERT ON outbox_emails
BEGIN
    UPDATE outbox_counts SET n = n + 1 WHERE state = NEW.state;
END;

CREATE TRIGGER outbox_counts_after_update AFTER UPDATE OF state ON outbox_emails
WHEN OLD.state IS NOT NEW.state
BEGIN
    UPDATE outbox_counts SET n = n - 1 WHERE state = OLD.state;
    UPDATE outbox_counts SET n = n + 1 WHERE state = NEW.state;
END;

CREATE TRIGGER outbox_counts_after_delete AFTER DELETE ON outbox_emails
BEGIN
    UPDATE outbox_counts SET n = n - 1 WHERE state = OLD.state;
END;
DELETE FROM outbox_counts WHERE state IN ('held', 'dropped');
