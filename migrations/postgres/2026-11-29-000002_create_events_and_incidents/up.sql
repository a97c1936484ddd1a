-- Incidents: failure events grouped by group key. At most one open incident per group.
CREATE TABLE incidents (
    id              TEXT PRIMARY KEY NOT NULL,
    group_key       TEXT NOT NULL,
    group_hash      TEXT NOT NULL,           -- SHA-256 of group_key: keys can be long
    source          TEXT NOT NULL,
    title           TEXT NOT NULL,
    service         TEXT,
    severity        INTEGER NOT NULL CHECK (severity BETWEEN 1 AND 5),
    state           TEXT NOT NULL CHECK (state IN ('open', 'resolved')),
    started_at      TIMESTAMP NOT NULL,
    detected_at     TIMESTAMP NOT NULL,
    acknowledged_at TIMESTAMP,
    resolved_at     TIMESTAMP,
    reopened_count  INTEGER NOT NULL DEFAULT 0,
    event_count     INTEGER NOT NULL DEFAULT 0,
    coe_required_at TIMESTAMP,               -- the COE mark: set when severity reached the policy
    created_at      TIMESTAMP NOT NULL,
    updated_at      TIMESTAMP NOT NULL
);
CREATE UNIQUE INDEX incidents_one_open_per_group ON incidents (group_hash) WHERE state = 'open';
CREATE INDEX incidents_by_group ON incidents (group_hash, created_at);
CREATE INDEX incidents_by_start ON incidents (started_at, id);
CREATE INDEX incidents_by_service ON incidents (service, started_at);

-- The alerts (dedup keys) of an incident and whether each is still firing.
CREATE TABLE incident_alerts (
    incident_id TEXT NOT NULL REFERENCES incidents (id) ON DELETE CASCADE,
    dedup_key   TEXT NOT NULL,
    status      TEXT NOT NULL CHECK (status IN ('firing', 'resolved')),
    updated_at  TIMESTAMP NOT NULL,
    PRIMARY KEY (incident_id, dedup_key)
);

-- Every received delivery that stored at least one event, with its body as received.
CREATE TABLE webhook_deliveries (
    id           TEXT PRIMARY KEY NOT NULL,
    source       TEXT NOT NULL,
    delivery_key TEXT,                       -- X-Webhook-Id, SNS MessageId
    content_type TEXT,
    body         TEXT NOT NULL,
    received_at  TIMESTAMP NOT NULL
);
CREATE UNIQUE INDEX webhook_deliveries_by_key ON webhook_deliveries (source, delivery_key)
    WHERE delivery_key IS NOT NULL;

-- Normalized failure events. One row per real occurrence.
CREATE TABLE failure_events (
    id              TEXT PRIMARY KEY NOT NULL,
    delivery_id     TEXT NOT NULL REFERENCES webhook_deliveries (id),
    incident_id     TEXT NOT NULL REFERENCES incidents (id),
    source          TEXT NOT NULL,
    dedup_key       TEXT NOT NULL,
    group_key       TEXT NOT NULL,
    occurrence_key  TEXT NOT NULL,
    occurrence_hash TEXT NOT NULL,           -- SHA-256 of source, dedup_key, occurrence_key
    kind            TEXT NOT NULL CHECK (kind IN ('fired', 'acknowledged', 'updated', 'resolved')),
    status          TEXT NOT NULL CHECK (status IN ('firing', 'resolved')),
    title           TEXT NOT NULL,
    service         TEXT,
    severity        INTEGER NOT NULL CHECK (severity BETWEEN 1 AND 5),
    started_at      TIMESTAMP NOT NULL,
    ended_at        TIMESTAMP,
    description     TEXT,
    labels          TEXT NOT NULL,           -- JSON object of strings
    annotations     TEXT NOT NULL,           -- JSON object of strings
    links           TEXT NOT NULL,           -- JSON array of http(s) URLs
    received_at     TIMESTAMP NOT NULL
);
CREATE UNIQUE INDEX failure_events_one_per_occurrence ON failure_events (occurrence_hash);
CREATE INDEX failure_events_by_incident ON failure_events (incident_id, received_at);
CREATE INDEX failure_events_by_delivery ON failure_events (delivery_id);
