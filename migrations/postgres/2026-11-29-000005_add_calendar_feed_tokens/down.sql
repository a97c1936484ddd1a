DROP INDEX people_by_feed_token;
ALTER TABLE people DROP COLUMN feed_token_hash;
