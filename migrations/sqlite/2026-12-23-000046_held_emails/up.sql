-- Two more states of an email: `held` (it was being sent when the backup a restore put
-- back was taken: it may have gone out, so an admin sends it again or drops it) and
-- `dropped` (an admin chose not to send it). `services::outbox::restored`.
INSERT INTO outbox_counts (state, n) VALUES ('held', 0), ('dropped', 0);

-- SQLite cannot change a CHECK constraint: the table is made again with the two
-- states allowed (its rows, indexes and counting triggers as they were; the rows are
-- copied before the triggers exist, so the counts stay as they are).
CREATE TABLE outbox_emails_new (
    id                TEXT PRIMARY KEY NOT NULL,
    kind              TEXT NOT NULL,
    dedup_key         TEXT NOT NULL UNIQUE,
    recipient         TEXT NOT NULL,
    recipient_name    TEXT,
    subject           TEXT NOT NULL,
    body_text         TEXT NOT NULL,
    body_html         TEXT NOT NULL,
    state             TEXT NOT NULL CHECK (state IN ('pending', 'sending', 'sent', 'failed', 'held', 'dropped')),
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

-- Facts about the database itself (`db::marks`): used on PostgreSQL, where a restore
-- from a dump is told by the outbox table's object id; on SQLite `coe restore` holds
-- what was in flight itself, and the table stays empty.
CREATE TABLE database_marks (
    name  TEXT PRIMARY KEY NOT NULL,
    value TEXT NOT NULL
);
