-- Sign-in through an OpenID Provider: a session may begin with method 'oidc', and
-- keeps the provider's ID token, which signing out hands back to the provider's
-- end_session_endpoint (`id_token_hint`; some providers, Okta among them, end their
-- own session only with it).
ALTER TABLE sessions DROP CONSTRAINT sessions_method_check;
ALTER TABLE sessions ADD CONSTRAINT sessions_method_check
    CHECK (method IN ('email-link', 'proxy', 'oidc'));
ALTER TABLE sessions ADD COLUMN id_token TEXT;
