-- Back-channel logout (OpenID Connect Back-Channel Logout 1.0): a session begun
-- through the provider keeps its ID token's `sub` and `sid`, so that the provider's
-- logout token, which names one or both, ends it.
ALTER TABLE sessions ADD COLUMN oidc_sub TEXT;
ALTER TABLE sessions ADD COLUMN oidc_sid TEXT;
CREATE INDEX sessions_by_oidc_sub ON sessions (oidc_sub) WHERE oidc_sub IS NOT NULL;
CREATE INDEX sessions_by_oidc_sid ON sessions (oidc_sid) WHERE oidc_sid IS NOT NULL;

-- The logout tokens taken, by their `jti`: one sent again is refused. Kept a day.
CREATE TABLE logout_tokens (
    jti     TEXT PRIMARY KEY NOT NULL,
    seen_at TIMESTAMP NOT NULL
);
