-- Every email is first a row here, written in the transaction that decided to send it.
-- A worker claims due rows (a lease: state 'sending' until `lease_until`), sends them,
-- and records the outcome. The unique dedup_key makes a second decision a no-op.
CREATE TABLE outbox_emails (
    id              TEXT PRIMARY KEY NOT NULL,
    kind            TEXT NOT NULL,
    dedup_key       TEXT NOT NULL UNIQUE,
    recipient       TEXT NOT NULL,
    recipient_name  TEXT,
    subject         TEXT NOT NULL,
    body_text       TEXT NOT NULL,
    body_html       TEXT NOT NULL,
    state           TEXT NOT NULL CHECK (state IN ('pending', 'sending', 'sent', 'failed')),
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at TIMESTAMP NOT NULL,
    lease_until     TIMESTAMP,
    last_error      TEXT,
    created_at      TIMESTAMP NOT NULL,
    updated_at      TIMESTAMP NOT NULL,
    sent_at         TIMESTAMP
);
CREATE INDEX outbox_emails_due ON outbox_emails (state, next_attempt_at);
CREATE INDEX outbox_emails_by_created ON outbox_emails (created_at, id);
