-- People sign in to the web pages. Roles come from the directory: its admin flag,
-- which only admins set.
ALTER TABLE people ADD COLUMN is_admin BOOLEAN NOT NULL DEFAULT FALSE;

-- One-time sign-in links: only the SHA-256 of the secret is kept. A link works once
-- (redeeming it sets used_at, on the condition that it was unset) and until expires_at.
CREATE TABLE sign_in_links (
    id         TEXT PRIMARY KEY NOT NULL,
    email      TEXT NOT NULL,
    token_hash TEXT NOT NULL UNIQUE,
    next_path  TEXT,
    created_at TIMESTAMP NOT NULL,
    expires_at TIMESTAMP NOT NULL,
    used_at    TIMESTAMP
);
CREATE INDEX sign_in_links_by_expiry ON sign_in_links (expires_at);

-- Every sign-in request, for a known address or not: the rate limits count them per
-- address and per client, on every replica alike.
CREATE TABLE sign_in_requests (
    id     TEXT PRIMARY KEY NOT NULL,
    email  TEXT NOT NULL,
    client TEXT NOT NULL,
    at     TIMESTAMP NOT NULL
);
CREATE INDEX sign_in_requests_by_email ON sign_in_requests (email, at);
CREATE INDEX sign_in_requests_by_client ON sign_in_requests (client, at);

-- Browser sessions, shared by every replica: the cookie holds a secret, the row its
-- SHA-256. csrf_token is the token every form of the session carries.
CREATE TABLE sessions (
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
CREATE INDEX sessions_by_person ON sessions (person_email, ended_at);
