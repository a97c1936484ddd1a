-- A summary for customers becomes a notice with a history. Publications are kept
-- by their address (`token`): taking one down keeps its row, so its address says
-- it was withdrawn; publishing again adds a row (one live per COE). Each has a title
-- written for customers and the time of its last update. A change of the text after
-- approval waits in `summary_changes` for the reviewer. A service may have a name
-- customers know it by. A replica still running the code before this one reads and
-- writes these tables by `coe_id` as before (publishing again there forgets the
-- withdrawn addresses of that COE: they answer 404 instead of "withdrawn").
ALTER TABLE publications DROP CONSTRAINT publications_pkey;
ALTER TABLE publications ADD PRIMARY KEY (token);
DROP INDEX publications_by_token;
ALTER TABLE publications
    ADD COLUMN title TEXT NOT NULL DEFAULT '',
    ADD COLUMN updated_by TEXT,
    ADD COLUMN updated_at TIMESTAMP;
CREATE INDEX publications_by_coe ON publications (coe_id, published_at);
CREATE UNIQUE INDEX publications_live ON publications (coe_id) WHERE revoked_at IS NULL;

CREATE TABLE summary_changes (
    id           TEXT PRIMARY KEY NOT NULL,
    coe_id       TEXT NOT NULL REFERENCES coes (id) ON DELETE CASCADE,
    title        TEXT NOT NULL,
    body         TEXT NOT NULL,
    proposed_by  TEXT NOT NULL,
    proposed_at  TIMESTAMP NOT NULL,
    -- 'approved', 'sent_back' or 'replaced' (by a newer change), once decided.
    decision     TEXT,
    decided_by   TEXT,
    decided_at   TIMESTAMP,
    note         TEXT
);
CREATE INDEX summary_changes_by_coe ON summary_changes (coe_id, proposed_at);
CREATE UNIQUE INDEX summary_changes_waiting ON summary_changes (coe_id) WHERE decided_at IS NULL;

ALTER TABLE service_owners ADD COLUMN customer_name TEXT;
