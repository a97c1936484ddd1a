DROP TABLE logout_tokens;
DROP INDEX sessions_by_oidc_sid;
DROP INDEX sessions_by_oidc_sub;
ALTER TABLE sessions DROP COLUMN oidc_sid;
ALTER TABLE sessions DROP COLUMN oidc_sub;
