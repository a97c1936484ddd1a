-- A per-person secret for the calendar feed URL (calendars cannot send headers); only its hash is kept.
ALTER TABLE people ADD COLUMN feed_token_hash TEXT;
CREATE UNIQUE INDEX people_by_feed_token ON people (feed_token_hash) WHERE feed_token_hash IS NOT NULL;
