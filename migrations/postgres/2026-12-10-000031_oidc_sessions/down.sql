DELETE FROM sessions WHERE method = 'oidc';
ALTER TABLE sessions DROP COLUMN id_token;
ALTER TABLE sessions DROP CONSTRAINT sessions_method_check;
ALTER TABLE sessions ADD CONSTRAINT sessions_method_check
    CHECK (method IN ('email-link', 'proxy'));
