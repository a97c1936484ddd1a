DELETE FROM api_tokens WHERE role = 'scim';
CREATE TABLE api_tokens_new (
    id           TEXT PRIMARY KEY NOT NULL,
    name         TEXT NOT NULL,
    role         TEXT NOT NULL CHECK (role IN ('admin', 'member', 'ingest')),
    person_email TEXT,
    token_hash   TEXT NOT NULL UNIQUE,
    created_at   TIMESTAMP NOT NULL,
    last_used_at TIMESTAMP,
    revoked_at   TIMESTAMP,
    created_by   TEXT
);
INSERT INTO api_tokens_new SELECT id, name, role, person_email, token_hash, created_at, last_used_at, revoked_at, created_by FROM api_tokens;
DROP TABLE api_tokens;
ALTER TABLE api_tokens_new RENAME TO api_tokens;
CREATE UNIQUE INDEX api_tokens_active_name ON api_tokens (name) WHERE revoked_at IS NULL;
DROP TABLE scim_group_members;
DROP TABLE scim_groups;
DROP INDEX people_by_scim_manager_ref;
DROP INDEX people_by_scim_external_id;
DROP INDEX people_by_scim_user_name;
DROP INDEX people_by_scim_id;
ALTER TABLE people DROP COLUMN left_at;
ALTER TABLE people DROP COLUMN active;
ALTER TABLE people DROP COLUMN scim_manager_ref;
ALTER TABLE people DROP COLUMN scim_doc;
ALTER TABLE people DROP COLUMN scim_external_id;
ALTER TABLE people DROP COLUMN scim_user_name;
ALTER TABLE people DROP COLUMN scim_id;
