-- The outbox's emails by state, kept by the writes that change them so that the
-- dashboard, `/api/v1/outbox` and the admin page read a few rows instead of counting
-- every email ever sent (`services::outbox::counts`).
--
-- A counter row every email's transaction updated would make those transactions wait
-- on each other (an action's, a reminder pass's, every replica's delivery). So each
-- statement that changes the outbox appends its net change per state to
-- `outbox_count_changes`, and the delivery pass folds them into `outbox_counts`
-- (`services::outbox::fold_counts`: the changes deleted and added in one statement).
-- The counts are `outbox_counts` plus the changes not yet folded.
CREATE TABLE outbox_counts (
    state TEXT PRIMARY KEY,
    n     BIGINT NOT NULL
);

INSERT INTO outbox_counts (state, n)
SELECT s.state, (SELECT count(*) FROM outbox_emails e WHERE e.state = s.state)
  FROM unnest(ARRAY['pending', 'sending', 'sent', 'failed']) AS s(state);

CREATE TABLE outbox_count_changes (
    id    BIGSERIAL PRIMARY KEY,
    state TEXT NOT NULL,
    n     BIGINT NOT NULL
);

CREATE FUNCTION coe_outbox_counts_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO outbox_count_changes (state, n)
    SELECT state, count(*) FROM new_rows GROUP BY state;
    RETURN NULL;
END;
$$;

CREATE FUNCTION coe_outbox_counts_updated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO outbox_count_changes (state, n)
    SELECT state, sum(d) FROM (SELECT state, -1 AS d FROM old_rows
                               UNION ALL SELECT state, 1 FROM new_rows) c
     GROUP BY state HAVING sum(d) <> 0;
    RETURN NULL;
END;
$$;

CREATE FUNCTION coe_outbox_counts_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO outbox_count_changes (state, n)
    SELECT state, -count(*) FROM old_rows GROUP BY state;
    RETURN NULL;
END;
$$;

CREATE TRIGGER outbox_counts_after_insert AFTER INSERT ON outbox_emails
REFERENCING NEW TABLE AS new_rows
FOR EACH STATEMENT EXECUTE FUNCTION coe_outbox_counts_inserted();

CREATE TRIGGER outbox_counts_after_update AFTER UPDATE ON outbox_emails
REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
FOR EACH STATEMENT EXECUTE FUNCTION coe_outbox_counts_updated();

CREATE TRIGGER outbox_counts_after_delete AFTER DELETE ON outbox_emails
REFERENCING OLD TABLE AS old_rows
FOR EACH STATEMENT EXECUTE FUNCTION coe_outbox_counts_deleted();
