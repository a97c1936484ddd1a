-- Risk accepted, with an expiry: instead of moving a due date again and again, an
-- action's owner asks to accept the risk until a day, saying what interim control is
-- in place and what risk remains; the owner's manager or the COE's bar raiser decides.
-- Accepted, the action is due on that day (it is not overdue until then, and overdue
-- and escalated as usual after it); `risk_accepted_until` marks it on the board.
CREATE TABLE risk_acceptances (
    id               TEXT PRIMARY KEY NOT NULL,
    action_id        TEXT NOT NULL REFERENCES corrective_actions (id) ON DELETE CASCADE,
    asked_by         TEXT NOT NULL,
    asked_at         TIMESTAMP NOT NULL,
    until_date       DATE NOT NULL,
    interim_control  TEXT NOT NULL,
    remaining_risk   TEXT NOT NULL,
    due_before       DATE NOT NULL,
    -- asked, accepted, refused
    state            TEXT NOT NULL,
    decided_by       TEXT,
    decided_at       TIMESTAMP,
    decision_note    TEXT
);
CREATE INDEX risk_acceptances_by_action ON risk_acceptances (action_id, asked_at);
-- One request waits per action.
CREATE UNIQUE INDEX risk_acceptances_one_asked ON risk_acceptances (action_id) WHERE state = 'asked';
ALTER TABLE corrective_actions ADD COLUMN risk_accepted_until DATE;
