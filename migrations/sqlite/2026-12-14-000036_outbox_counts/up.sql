-- The outbox's emails by state, kept by the writes that change them so that the
-- dashboard, `/api/v1/outbox` and the admin page read four rows instead of counting
-- every email ever sent (`services::outbox::counts`). On SQLite the one writer keeps
-- `outbox_counts` itself, row by row; `outbox_count_changes` is PostgreSQL's (where a
-- counter row every email's transaction updated would make them wait on each other),
-- made here too so that both databases are read and folded the same way, and stays
-- empty.
CREATE TABLE outbox_counts (
    state TEXT PRIMARY KEY NOT NULL,
    n     BIGINT NOT NULL
) WITHOUT ROWID;

INSERT INTO outbox_counts (state, n)
SELECT s.state, (SELECT count(*) FROM outbox_emails e WHERE e.state = s.state)
  FROM (SELECT 'pending' AS state UNION ALL SELECT 'sending' UNION ALL SELECT 'sent'
        UNION ALL SELECT 'failed') s;

CREATE TABLE outbox_count_changes (
    id    INTEGER PRIMARY KEY AUTOINCREMENT NOT NULL,
    state TEXT NOT NULL,
    n     BIGINT NOT NULL
);

CREATE TRIGGER outbox_counts_after_insert AFTER INSERT ON outbox_emails
BEGIN
    UPDATE outbox_counts SET n = n + 1 WHERE state = NEW.state;
END;

CREATE TRIGGER outbox_counts_after_update AFTER UPDATE OF state ON outbox_emails
WHEN OLD.state IS NOT NEW.state
BEGIN
    UPDATE outbox_counts SET n = n - 1 WHERE state = OLD.state;
    UPDATE outbox_counts SET n = n + 1 WHERE state = NEW.state;
END;

CREATE TRIGGER outbox_counts_after_delete AFTER DELETE ON outbox_emails
BEGIN
    UPDATE outbox_counts SET n = n - 1 WHERE state = OLD.state;
END;
