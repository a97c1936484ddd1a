-- The people directory: owners, their teams and managers.
CREATE TABLE people (
    email         TEXT PRIMARY KEY NOT NULL,   -- lower-case
    name          TEXT,
    team          TEXT,
    manager_email TEXT,
    timezone      TEXT,
    created_at    TIMESTAMP NOT NULL,
    updated_at    TIMESTAMP NOT NULL
);
CREATE INDEX people_by_team ON people (team);
CREATE INDEX people_by_manager ON people (manager_email);

-- Corrective actions, tracked to closure.
CREATE TABLE corrective_actions (
    id                    TEXT PRIMARY KEY NOT NULL,
    coe_id                TEXT NOT NULL REFERENCES coes (id),
    title                 TEXT NOT NULL,
    description           TEXT,
    owner_email           TEXT NOT NULL,
    due_date              DATE NOT NULL,
    priority              TEXT NOT NULL CHECK (priority IN ('high', 'medium', 'low')),
    kind                  TEXT NOT NULL CHECK (kind IN ('detect', 'diagnose', 'mitigate', 'prevent', 'process')),
    success_criteria      TEXT,
    external_url          TEXT,
    state                 TEXT NOT NULL CHECK (state IN ('open', 'in_progress', 'done', 'wont_do')),
    resolution_note       TEXT,
    evidence_url          TEXT,
    wont_do_reason        TEXT,
    due_date_change_count INTEGER NOT NULL DEFAULT 0,
    created_by            TEXT NOT NULL,
    created_at            TIMESTAMP NOT NULL,
    updated_at            TIMESTAMP NOT NULL,
    closed_at             TIMESTAMP
);
CREATE INDEX corrective_actions_by_state_due ON corrective_actions (state, due_date);
CREATE INDEX corrective_actions_by_owner ON corrective_actions (owner_email, state, due_date);
CREATE INDEX corrective_actions_by_coe ON corrective_actions (coe_id, created_at);

-- Every moved due date, with its reason.
CREATE TABLE due_date_changes (
    id         TEXT PRIMARY KEY NOT NULL,
    action_id  TEXT NOT NULL REFERENCES corrective_actions (id) ON DELETE CASCADE,
    from_date  DATE NOT NULL,
    to_date    DATE NOT NULL,
    reason     TEXT NOT NULL,
    changed_by TEXT NOT NULL,
    changed_at TIMESTAMP NOT NULL
);
CREATE INDEX due_date_changes_by_action ON due_date_changes (action_id, changed_at);

-- The review of a COE: requests for changes, approvals, comments.
CREATE TABLE review_comments (
    id         TEXT PRIMARY KEY NOT NULL,
    coe_id     TEXT NOT NULL REFERENCES coes (id) ON DELETE CASCADE,
    author     TEXT NOT NULL,
    verdict    TEXT NOT NULL CHECK (verdict IN ('submitted', 'changes_requested', 'approved', 'comment')),
    body       TEXT NOT NULL,
    created_at TIMESTAMP NOT NULL
);
CREATE INDEX review_comments_by_coe ON review_comments (coe_id, created_at);
