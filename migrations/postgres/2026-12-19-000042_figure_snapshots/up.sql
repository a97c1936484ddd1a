-- The figures about the past (actions closed in 30 and 90 days, the weeks, the
-- actions closed in the coverage audit's period) are a job's output now: the figures
-- job (`jobs::figures`) counts them every few minutes and at a new day into a row
-- here, which the views read with the live counters (`action_tally`). The change log
-- replayed into figures kept in memory (migration 000039) goes.
CREATE TABLE figure_snapshots (
    -- What was counted, for whom (`services::stats::snapshot`).
    name       TEXT PRIMARY KEY,
    -- When the count read the actions.
    counted_at TIMESTAMP NOT NULL,
    -- The figures, as JSON.
    figures    TEXT NOT NULL
);

-- `action_tally_day.history` still numbers the changes a write's `updated_at` may not
-- show (an action deleted, written with past dates, closed, reopened, its due date
-- or owner moved): the board's and the action list's totals, kept between changes
-- (`stats::PerChange`), are counted again after each. Moving it takes the day row, so
-- the owners' rows are recounted against a day that cannot move meanwhile.
CREATE OR REPLACE FUNCTION coe_action_tally_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    changed BOOLEAN;
BEGIN
    changed := EXISTS (SELECT 1 FROM new_rows n, action_tally_day d
                        WHERE d.id = 1 AND (n.closed_at IS NOT NULL OR n.due_date < d.day
                                            OR n.created_at < d.day));
    IF changed THEN
        UPDATE action_tally_day SET history = history + 1 WHERE id = 1;
    END IF;
    PERFORM coe_action_tally_apply(ARRAY(SELECT DISTINCT owner_email FROM new_rows), changed);
    RETURN NULL;
END;
$$;

CREATE OR REPLACE FUNCTION coe_action_tally_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    changed BOOLEAN;
BEGIN
    changed := EXISTS (SELECT 1 FROM old_rows);
    IF changed THEN
        UPDATE action_tally_day SET history = history + 1 WHERE id = 1;
    END IF;
    PERFORM coe_action_tally_apply(ARRAY(SELECT DISTINCT owner_email FROM old_rows), changed);
    RETURN NULL;
END;
$$;

CREATE OR REPLACE FUNCTION coe_action_tally_updated() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    changed BOOLEAN;
BEGIN
    changed := EXISTS (SELECT 1 FROM old_rows o JOIN new_rows n ON n.id = o.id
                        WHERE o.due_date IS DISTINCT FROM n.due_date
                           OR o.closed_at IS DISTINCT FROM n.closed_at
                           OR o.created_at IS DISTINCT FROM n.created_at
                           OR ((o.closed_at IS NOT NULL OR n.closed_at IS NOT NULL)
                               AND (o.state IS DISTINCT FROM n.state
                                    OR o.owner_email IS DISTINCT FROM n.owner_email)));
    IF changed THEN
        UPDATE action_tally_day SET history = history + 1 WHERE id = 1;
    END IF;
    PERFORM coe_action_tally_apply(
        ARRAY(SELECT o.owner_email FROM old_rows o JOIN new_rows n ON n.id = o.id
               WHERE o.owner_email IS DISTINCT FROM n.owner_email
                  OR o.state IS DISTINCT FROM n.state OR o.due_date IS DISTINCT FROM n.due_date
              UNION
              SELECT n.owner_email FROM old_rows o JOIN new_rows n ON n.id = o.id
               WHERE o.owner_email IS DISTINCT FROM n.owner_email
                  OR o.state IS DISTINCT FROM n.state OR o.due_date IS DISTINCT FROM n.due_date),
        changed);
    RETURN NULL;
END;
$$;

DROP FUNCTION coe_action_past_logged(BIGINT, BIGINT);
DROP FUNCTION coe_action_past_skipped(BIGINT);
DROP TABLE action_past_changes;
