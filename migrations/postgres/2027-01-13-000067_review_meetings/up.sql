-- The review meeting of one COE: when its owner (or reviewer) invited the people
-- who read it (owner, reviewer, bar raiser, action owners) with an iCalendar
-- invitation (RFC 5545/5546), its UID, and the SEQUENCE each update or cancellation
-- takes. Each email carries its iCalendar part in `outbox_emails.calendar`.
CREATE TABLE review_meetings (
    coe_id      TEXT PRIMARY KEY NOT NULL REFERENCES coes (id) ON DELETE CASCADE,
    uid         TEXT NOT NULL,
    starts_at   TIMESTAMP NOT NULL,
    minutes     INTEGER NOT NULL,
    sequence    INTEGER NOT NULL,
    -- scheduled, cancelled
    state       TEXT NOT NULL,
    set_by      TEXT NOT NULL,
    updated_at  TIMESTAMP NOT NULL
);
ALTER TABLE outbox_emails ADD COLUMN calendar TEXT;
