CREATE TABLE sessions_old (
    id           TEXT PRIMARY KEY NOT NULL,
    token_hash   TEXT NOT NULL UNIQUE,
    person_email TEXT NOT NULL,
    csrf_token   TEXT NOT NULL,
    method       TEXT NOT NULL CHECK (method IN ('email-link', 'proxy')),
    client       TEXT NOT NULL,
    created_at   TIMESTAMP NOT NULL,
    last_seen_at TIMESTAMP NOT NULL,
    ended_at     TIMESTAMP,
    ended_by     TEXT
);
INSERT INTO sessions_old
    SELECT id, token_hash, person_email, csrf_token, method, client,
           created_at, last_seen_at, ended_at, ended_by
    FROM sessions WHERE method <> 'oidc';
DROP TABLE sessions;
ALTER TABLE sessions_old RENAME TO sessions;
CREATE INDEX sessions_by_person ON sessions (person_email, ended_at);
