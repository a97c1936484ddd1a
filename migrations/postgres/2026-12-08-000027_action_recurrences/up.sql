-- A recurrence judges the actions meant to prevent it: an incident that matched an
-- earlier COE after some of that COE's actions of kind prevent, detect or mitigate
-- were done is recorded against each such action, once per incident.
CREATE TABLE action_recurrences (
    action_id   TEXT NOT NULL,
    incident_id TEXT NOT NULL,
    -- The COE of the recurrence (it follows a merge).
    coe_id      TEXT NOT NULL,
    -- When the recurrence started (its incident's start).
    at          TIMESTAMP NOT NULL,
    created_at  TIMESTAMP NOT NULL,
    PRIMARY KEY (action_id, incident_id)
);
CREATE INDEX action_recurrences_by_coe ON action_recurrences (coe_id);
CREATE INDEX action_recurrences_by_time ON action_recurrences (at);
