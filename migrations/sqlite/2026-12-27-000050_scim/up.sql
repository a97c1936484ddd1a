-- SCIM 2.0 provisioning (RFC 7643/7644) from the identity provider. A provisioned
-- person keeps the SCIM resource's id, its userName (lower case, for lookups), its
-- externalId, the resource as the provider last wrote it (JSON), and the reference to
-- their manager as sent (resolved to manager_email once that person exists).
ALTER TABLE people ADD COLUMN scim_id TEXT;
ALTER TABLE people ADD COLUMN scim_user_name TEXT;
ALTER TABLE people ADD COLUMN scim_external_id TEXT;
ALTER TABLE people ADD COLUMN scim_doc TEXT;
ALTER TABLE people ADD COLUMN scim_manager_ref TEXT;
-- Whether the person still works here; when they left (SCIM active=false or deleted,
-- or an admin's "left the company").
ALTER TABLE people ADD COLUMN active BOOLEAN NOT NULL DEFAULT TRUE;
ALTER TABLE people ADD COLUMN left_at TIMESTAMP;
CREATE UNIQUE INDEX people_by_scim_id ON people (scim_id);
CREATE UNIQUE INDEX people_by_scim_user_name ON people (scim_user_name);
CREATE INDEX people_by_scim_external_id ON people (scim_external_id);
CREATE INDEX people_by_scim_manager_ref ON people (scim_manager_ref);

-- SCIM groups: every group the provider sends is kept (so that it can read it back);
-- those that `scim.team_groups` names are teams, and their members' team follows them.
CREATE TABLE scim_groups (
    id           TEXT PRIMARY KEY NOT NULL,
    display_name TEXT NOT NULL,
    external_id  TEXT,
    doc          TEXT NOT NULL,
    created_at   TIMESTAMP NOT NULL,
    updated_at   TIMESTAMP NOT NULL
);
CREATE INDEX scim_groups_by_display_name ON scim_groups (display_name);
CREATE TABLE scim_group_members (
    group_id  TEXT NOT NULL,
    member_id TEXT NOT NULL,
    PRIMARY KEY (group_id, member_id)
);
CREATE INDEX scim_group_members_by_member ON scim_group_members (member_id);

-- A fourth token role, `scim`, that may only provision people. SQLite cannot change a
-- CHECK constraint: the table is made again, its rows and indexes as they were.
CREATE TABLE api_tokens_new (
    id           TEXT PRIMARY KEY NOT NULL,
    name         TEXT NOT NULL,
    role         TEXT NOT NULL CHECK (role IN ('admin', 'member', 'ingest', 'scim')),
    person_email TEXT,
    token_hash   TEXT NOT NULL UNIQUE,
    created_at   TIMESTAMP NOT NULL,
    last_used_at TIMESTAMP,
    revoked_at   TIMESTAMP,
    created_by   TEXT
);
INSERT INTO api_tokens_new (id, name, role, person_email, token_hash, created_at, last_used_at, revoked_at, created_by)
    SELECT id, name, role, person_email, token_hash, created_at, last_used_at, revoked_at, created_by FROM api_tokens;
DROP TABLE api_tokens;
ALTER TABLE api_tokens_new RENAME TO api_tokens;
CREATE UNIQUE INDEX api_tokens_active_name ON api_tokens (name) WHERE revoked_at IS NULL;
