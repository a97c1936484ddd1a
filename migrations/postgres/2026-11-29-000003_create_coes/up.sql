-- COEs: the structured writeups. At most one per incident.
CREATE TABLE coes (
    id               TEXT PRIMARY KEY NOT NULL,
    incident_id      TEXT REFERENCES incidents (id),
    title            TEXT NOT NULL,
    service          TEXT,
    severity         INTEGER NOT NULL CHECK (severity BETWEEN 1 AND 5),
    state            TEXT NOT NULL CHECK (state IN ('draft', 'in_review', 'approved', 'closed')),
    owner_email      TEXT,
    reviewer_email   TEXT,
    template         TEXT NOT NULL,          -- the template (JSON) the COE was created with
    template_name    TEXT NOT NULL,
    template_version INTEGER NOT NULL,
    started_at       TIMESTAMP,
    detected_at      TIMESTAMP,
    mitigated_at     TIMESTAMP,
    resolved_at      TIMESTAMP,
    links            TEXT NOT NULL,          -- JSON array of links gathered from the events
    version          INTEGER NOT NULL,       -- bumped by every change; the ETag
    created_by       TEXT NOT NULL,
    created_at       TIMESTAMP NOT NULL,
    updated_at       TIMESTAMP NOT NULL
);
CREATE UNIQUE INDEX coes_one_per_incident ON coes (incident_id) WHERE incident_id IS NOT NULL;
CREATE INDEX coes_by_state ON coes (state, created_at);
CREATE INDEX coes_by_service ON coes (service, created_at);
CREATE INDEX coes_by_owner ON coes (owner_email, created_at);

-- Bodies of the text sections, Markdown as written.
CREATE TABLE coe_sections (
    coe_id     TEXT NOT NULL REFERENCES coes (id) ON DELETE CASCADE,
    key        TEXT NOT NULL,
    body       TEXT NOT NULL,
    updated_by TEXT NOT NULL,
    updated_at TIMESTAMP NOT NULL,
    PRIMARY KEY (coe_id, key)
);

-- The timeline: one entry per event at first, then edited by people.
CREATE TABLE timeline_entries (
    id         TEXT PRIMARY KEY NOT NULL,
    coe_id     TEXT NOT NULL REFERENCES coes (id) ON DELETE CASCADE,
    at         TIMESTAMP NOT NULL,
    kind       TEXT NOT NULL,
    text       TEXT NOT NULL,
    source     TEXT,
    event_id   TEXT REFERENCES failure_events (id),
    created_at TIMESTAMP NOT NULL
);
CREATE INDEX timeline_entries_by_coe ON timeline_entries (coe_id, at);
CREATE UNIQUE INDEX timeline_entries_one_per_event ON timeline_entries (coe_id, event_id)
    WHERE event_id IS NOT NULL;

-- 5-whys chains; the ordered steps are a JSON array of {"why", "because"}.
CREATE TABLE why_chains (
    id         TEXT PRIMARY KEY NOT NULL,
    coe_id     TEXT NOT NULL REFERENCES coes (id) ON DELETE CASCADE,
    position   INTEGER NOT NULL,
    steps      TEXT NOT NULL,
    created_at TIMESTAMP NOT NULL,
    updated_at TIMESTAMP NOT NULL
);
CREATE INDEX why_chains_by_coe ON why_chains (coe_id, position);

-- Links, tickets, runbooks, changes and other COEs.
CREATE TABLE related_items (
    id             TEXT PRIMARY KEY NOT NULL,
    coe_id         TEXT NOT NULL REFERENCES coes (id) ON DELETE CASCADE,
    kind           TEXT NOT NULL,
    title          TEXT,
    url            TEXT,
    related_coe_id TEXT REFERENCES coes (id),
    created_at     TIMESTAMP NOT NULL
);
CREATE INDEX related_items_by_coe ON related_items (coe_id);

-- "This happened before": a COE and an earlier COE with the same service and alert or group.
CREATE TABLE coe_recurrences (
    coe_id         TEXT NOT NULL REFERENCES coes (id) ON DELETE CASCADE,
    earlier_coe_id TEXT NOT NULL REFERENCES coes (id),
    matched_on     TEXT NOT NULL,
    created_at     TIMESTAMP NOT NULL,
    PRIMARY KEY (coe_id, earlier_coe_id)
);

-- Every change to a COE (and, later, to an action): who, when, what, before, after.
CREATE TABLE audit_log (
    id        TEXT PRIMARY KEY NOT NULL,
    entity    TEXT NOT NULL,
    entity_id TEXT NOT NULL,
    coe_id    TEXT,
    actor     TEXT NOT NULL,
    action    TEXT NOT NULL,
    before    TEXT,                           -- JSON
    after     TEXT,                           -- JSON
    at        TIMESTAMP NOT NULL
);
CREATE INDEX audit_log_by_coe ON audit_log (coe_id, at);
CREATE INDEX audit_log_by_entity ON audit_log (entity, entity_id, at);

-- Full-text search over a COE's title and all its text (sections, timeline, whys), kept by the app.
CREATE TABLE coe_search (
    coe_id TEXT PRIMARY KEY NOT NULL REFERENCES coes (id) ON DELETE CASCADE,
    title  TEXT NOT NULL,
    body   TEXT NOT NULL,
    tsv    tsvector GENERATED ALWAYS AS (
               setweight(to_tsvector('english', title), 'A') || setweight(to_tsvector('english', body), 'B')
           ) STORED
);
CREATE INDEX coe_search_tsv ON coe_search USING GIN (tsv);
