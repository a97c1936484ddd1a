-- A reviewer's comments on the sections of a COE in review, each answered in words by
-- its owner before the COE goes back to review.
CREATE TABLE section_comments (
    id          TEXT PRIMARY KEY NOT NULL,
    coe_id      TEXT NOT NULL REFERENCES coes (id) ON DELETE CASCADE,
    section     TEXT NOT NULL,
    author      TEXT NOT NULL,
    body        TEXT NOT NULL,
    created_at  TIMESTAMP NOT NULL,
    answer      TEXT,
    answered_by TEXT,
    answered_at TIMESTAMP
);
CREATE INDEX section_comments_by_coe ON section_comments (coe_id, created_at);
