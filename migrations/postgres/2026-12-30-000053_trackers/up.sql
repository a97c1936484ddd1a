-- Corrective actions kept in step with Jira, Linear or GitHub Issues (`[[trackers]]`).

-- The ticket of an action: at most one, and a ticket belongs to one action. `key`
-- is empty until the tracker made it; `meaning` is what coe reads its status as
-- (open, in_progress, done, wont_do, or unmapped: shown, never dropped); `asks` is
-- what the tracker's done or won't do awaits of the owner (evidence, a reason);
-- `pushed` is the meaning coe last sent, so that its echo is recognised.
CREATE TABLE tickets (
    action_id      TEXT PRIMARY KEY NOT NULL REFERENCES corrective_actions (id) ON DELETE CASCADE,
    tracker        TEXT NOT NULL,
    place          TEXT NOT NULL,
    ticket_key     TEXT,
    remote_id      TEXT,
    url            TEXT,
    status         TEXT,
    meaning        TEXT,
    asks           TEXT,
    asks_since     TIMESTAMP,
    pushed         TEXT,
    pushed_at      TIMESTAMP,
    assignee_note  TEXT,
    synced_at      TIMESTAMP,
    created_at     TIMESTAMP NOT NULL,
    updated_at     TIMESTAMP NOT NULL
);
CREATE UNIQUE INDEX tickets_by_key ON tickets (tracker, ticket_key);

-- What the trackers are to be told, delivered like email: once per `dedup_key`,
-- claimed under a lease, retried with back-off.
CREATE TABLE tracker_jobs (
    id              TEXT PRIMARY KEY NOT NULL,
    tracker         TEXT NOT NULL,
    action_id       TEXT NOT NULL,
    what            TEXT NOT NULL,
    detail          TEXT NOT NULL,
    dedup_key       TEXT NOT NULL,
    state           TEXT NOT NULL,
    attempts        INTEGER NOT NULL,
    next_attempt_at TIMESTAMP NOT NULL,
    lease_until     TIMESTAMP,
    claimed_by      TEXT,
    last_error      TEXT,
    created_at      TIMESTAMP NOT NULL,
    updated_at      TIMESTAMP NOT NULL,
    sent_at         TIMESTAMP
);
CREATE UNIQUE INDEX tracker_jobs_once ON tracker_jobs (dedup_key);
CREATE INDEX tracker_jobs_due ON tracker_jobs (state, next_attempt_at);
CREATE INDEX tracker_jobs_of_action ON tracker_jobs (action_id, state);

-- Webhook deliveries already taken, by the tracker's delivery id.
CREATE TABLE tracker_deliveries (
    tracker     TEXT NOT NULL,
    delivery_id TEXT NOT NULL,
    received_at TIMESTAMP NOT NULL,
    PRIMARY KEY (tracker, delivery_id)
);

-- Each tracker's health, for the admin page.
CREATE TABLE tracker_states (
    name          TEXT PRIMARY KEY NOT NULL,
    last_out_at   TIMESTAMP,
    last_in_at    TIMESTAMP,
    last_error    TEXT,
    last_error_at TIMESTAMP,
    unmapped      TEXT NOT NULL DEFAULT '[]',
    reconciled_at TIMESTAMP
);
