-- A drill that proves the fix: an action to detect or mitigate names the alert that
-- proves it (`drill_alarms`: the labels an event must carry). Some days after it is
-- verified, or when someone asks, coe opens a re-check (`drill_rechecks`): an event
-- carrying those labels proves it by itself (`proven`, with when the alarm fired and,
-- when the drill said when it started, how long it took); with none by its day it is
-- `missed`, and the COE's reviewer confirms the fix stands (`confirmed`) or reopens
-- the action (`reopened`). One that changed first is `withdrawn`.
CREATE TABLE drill_alarms (
    action_id   TEXT PRIMARY KEY NOT NULL REFERENCES corrective_actions (id) ON DELETE CASCADE,
    -- A JSON object of label names to values, every one of which an event must carry.
    labels      TEXT NOT NULL,
    set_by      TEXT NOT NULL,
    set_at      TIMESTAMP NOT NULL
);
CREATE TABLE drill_rechecks (
    id               TEXT PRIMARY KEY NOT NULL,
    action_id        TEXT NOT NULL REFERENCES corrective_actions (id) ON DELETE CASCADE,
    -- The labels as they were when it opened.
    labels           TEXT NOT NULL,
    -- Who asked for it; NULL: the sweep, some days after the action was verified.
    opened_by        TEXT,
    opened_at        TIMESTAMP NOT NULL,
    last_day         DATE NOT NULL,
    -- waiting, proven, missed, confirmed, reopened, withdrawn (the action changed first)
    state            TEXT NOT NULL,
    event_id         TEXT,
    fired_at         TIMESTAMP,
    -- From the drill's start (its `coe_drill` time) to the alarm, when it said.
    detected_seconds BIGINT,
    -- Who confirmed or reopened it; when it was settled (proven, decided, withdrawn).
    decided_by       TEXT,
    decided_at       TIMESTAMP,
    note             TEXT
);
CREATE INDEX drill_rechecks_by_action ON drill_rechecks (action_id, opened_at);
CREATE INDEX drill_rechecks_by_state ON drill_rechecks (state, last_day);
-- One re-check waits (or waits for its reviewer) per action.
CREATE UNIQUE INDEX drill_rechecks_one_open ON drill_rechecks (action_id) WHERE state IN ('waiting', 'missed');
