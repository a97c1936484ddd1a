-- What email each person wants from coe (`domain::notifications`): every email (the
-- default, no row), digests only, or only what needs them; and a pause of the
-- non-essential ones until a time. Escalations and assignments always go.
CREATE TABLE notification_settings (
    email        TEXT PRIMARY KEY,
    -- every | digests | essential
    mode         TEXT NOT NULL,
    paused_until TIMESTAMP,
    updated_at   TIMESTAMP NOT NULL
);

-- The links in reminders' and digests' `List-Unsubscribe` headers (RFC 2369, and
-- RFC 8058's one-click): a random token per email, kept hashed, that opens the
-- person's notification settings without signing in. Pruned after 90 days.
CREATE TABLE unsubscribe_links (
    token_hash TEXT PRIMARY KEY,
    email      TEXT NOT NULL,
    created_at TIMESTAMP NOT NULL
);
CREATE INDEX unsubscribe_links_created ON unsubscribe_links (created_at);

-- The token of an email's unsubscribe link, for its `List-Unsubscribe` header.
ALTER TABLE outbox_emails ADD COLUMN unsubscribe_token TEXT;
