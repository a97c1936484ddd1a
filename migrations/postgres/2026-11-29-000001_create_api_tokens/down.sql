DROP INDEX api_tokens_active_name;
DROP TABLE api_tokens;
