-- The incidents a COE covers: one outage is often several alert groups (the database,
-- checkout's error rate, the gateway's 5xx). An incident belongs to one COE at most;
-- `coes.incident_id` stays the COE's first incident.
CREATE TABLE coe_incidents (
    incident_id TEXT PRIMARY KEY NOT NULL REFERENCES incidents (id) ON DELETE CASCADE,
    coe_id      TEXT NOT NULL REFERENCES coes (id) ON DELETE CASCADE,
    attached_by TEXT NOT NULL,
    attached_at TIMESTAMP NOT NULL
);
CREATE INDEX coe_incidents_by_coe ON coe_incidents (coe_id);
INSERT INTO coe_incidents (incident_id, coe_id, attached_by, attached_at)
    SELECT incident_id, id, created_by, created_at FROM coes WHERE incident_id IS NOT NULL;
