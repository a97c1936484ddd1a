-- Sign-in through an OpenID Provider: a session may begin with method 'oidc', and
-- keeps the provider's ID token, which signing out hands back to the provider's
-- end_session_endpoint (`id_token_hint`; some providers, Okta among them, end their
-- own session only with it). SQLite cannot change a CHECK: the table is rebuilt.
CREATE TABLE sessions_new (
    id           TEXT PRIMARY KEY NOT NULL,
    token_hash   TEXT NOT NULL UNIQUE,
    person_email TEXT NOT NULL,
    csrf_token   TEXT NOT NULL,
    method       TEXT NOT NULL CHECK (method IN ('email-link', 'proxy', 'oidc')),
    client       TEXT NOT NULL,
    created_at   TIMESTAMP NOT NULL,
    last_seen_at TIMESTAMP NOT NULL,
    ended_at     TIMESTAMP,
    ended_by     TEXT,
    id_token     TEXT
);
INSERT INTO sessions_new (id, token_hash, person_email, csrf_token, method, client,
                          created_at, last_seen_at, ended_at, ended_by)
    SELECT id, token_hash, person_email, csrf_token, method, client,
           created_at, last_seen_at, ended_at, ended_by
    FROM sessions;
DROP TABLE sessions;
ALTER TABLE sessions_new RENAME TO sessions;
CREATE INDEX sessions_by_person ON sessions (person_email, ended_at);
