-- Notices in team chat (Slack, Teams, Google Chat, Mattermost, Matrix), delivered
-- like email: a row decided in the event's transaction, sent by the worker under a
-- lease, retried with back-off. dedup_key (channel:event key) makes each notice once.
CREATE TABLE chat_messages (
    id              TEXT PRIMARY KEY NOT NULL,
    channel         TEXT NOT NULL,
    event           TEXT NOT NULL,
    dedup_key       TEXT NOT NULL UNIQUE,
    body            TEXT NOT NULL,
    state           TEXT NOT NULL CHECK (state IN ('pending', 'sending', 'sent', 'failed')),
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at TIMESTAMP NOT NULL,
    lease_until     TIMESTAMP,
    last_error      TEXT,
    created_at      TIMESTAMP NOT NULL,
    updated_at      TIMESTAMP NOT NULL,
    sent_at         TIMESTAMP
);
CREATE INDEX chat_messages_due ON chat_messages (state, next_attempt_at);

-- Each channel as the worker last found it, for the admin page.
CREATE TABLE chat_channels (
    name              TEXT PRIMARY KEY NOT NULL,
    last_delivered_at TIMESTAMP,
    last_error        TEXT,
    last_error_at     TIMESTAMP,
    broken_at         TIMESTAMP
);
