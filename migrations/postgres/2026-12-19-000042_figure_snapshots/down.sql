-- Back to migration 000039's change log (empty: a figure kept by that version counts
-- again, since the history number moves on below).
DROP TABLE figure_snapshots;

CREATE TABLE action_past_changes (
    -- `action_tally_day.history` after the change.
    seq             BIGINT PRIMARY KEY,
    action_id       TEXT NOT NULL,
    -- The action before the change (all NULL for an action written).
    old_owner_email TEXT,
    old_state       TEXT,
    old_due_date    DATE,
    old_created_at  TIMESTAMP,
    old_closed_at   TIMESTAMP,
    -- The action after it (all NULL for an action deleted).
    new_owner_email TEXT,
    new_state       TEXT,
    new_due_date    DATE,
    new_created_at  TIMESTAMP,
    new_closed_at   TIMESTAMP
);

-- The caller has written `logged` changes numbered after `base` (holding the day row
-- FOR UPDATE): the day row counts them and the changes older than the last 10,000
-- go.
CREATE FUNCTION coe_action_past_logged(base BIGINT, logged BIGINT) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    IF logged > 0 THEN
        UPDATE action_tally_day SET history = base + logged WHERE id = 1;
        DELETE FROM action_past_changes WHERE seq <= base + logged - 10000;
    END IF;
END;
$$;

-- More changes in one statement than are kept: the number moves on past them (with
-- the day row FOR UPDATE) and none is written; a kept figure then counts again.
CREATE FUNCTION coe_action_past_skipped(changed BIGINT) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    UPDATE action_tally_day SET history = history + changed WHERE id = 1;
END;
$$;

CREATE OR REPLACE FUNCTION coe_action_tally_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    base BIGINT;
    changed BIGINT;
    logged BIGINT := 0;
BEGIN
    -- An action written open and due from `day` on counts for nothing in the past
    -- (every week's end is before its due date): not kept.
    IF EXISTS (SELECT 1 FROM new_rows n, action_tally_day d
                WHERE d.id = 1 AND (n.closed_at IS NOT NULL OR n.due_date < d.day)) THEN
        SELECT history INTO base FROM action_tally_day WHERE id = 1 FOR UPDATE;
        SELECT count(*) INTO changed FROM new_rows n
         WHERE n.closed_at IS NOT NULL
            OR n.due_date < (SELECT day FROM action_tally_day WHERE id = 1);
        IF changed > 10000 THEN
            PERFORM coe_action_past_skipped(changed);
        ELSE
            INSERT INTO action_past_changes (seq, action_id, new_owner_email, new_state,
                                             new_due_date, new_created_at, new_closed_at)
            SELECT base + row_number() OVER (ORDER BY n.id), n.id, n.owner_email, n.state,
                   n.due_date, n.created_at, n.closed_at
              FROM new_rows n, action_tally_day d
             WHERE d.id = 1 AND (n.closed_at IS NOT NULL OR n.due_date < d.day);
            GET DIAGNOSTICS logged = ROW_COUNT;
            PERFORM coe_action_past_logged(base, logged);
        END IF;
    END IF;
    PERFORM coe_action_tally_apply(ARRAY(SELECT DISTINCT owner_email FROM new_rows), base IS NOT NULL);
    RETURN NULL;
END;
$$;

CREATE OR REPLACE FUNCTION coe_action_tally_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    base BIGINT;
    changed BIGINT;
    logged BIGINT := 0;
BEGIN
    SELECT count(*) INTO changed FROM old_rows;
    IF changed > 0 THEN
        SELECT history INTO base FROM action_tally_day WHERE id = 1 FOR UPDATE;
        IF changed > 10000 THEN
            PERFORM coe_action_past_skipped(changed);
        ELSE
            INSERT INTO action_past_changes (seq, action_id, old_owner_email, old_state,
                                             old_due_date, old_created_at, old_closed_at)
            SELECT base + row_number() OVER (ORDER BY o.id), o.id, o.owner_email, o.state,
                   o.due_date, o.created_at, o.closed_at
              FROM old_rows o;
            GET DIAGNOSTICS logged = ROW_COUNT;
            PERFORM coe_action_past_logged(base, logged);
        END IF;
    END IF;
    PERFORM coe_action_tally_apply(ARRAY(SELECT DISTINCT owner_email FROM old_rows), base IS NOT NULL);
    RETURN NULL;
END;
$$;

CREATE OR REPLACE FUNCTION coe_action_tally_updated() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    base BIGINT;
    changed BIGINT;
    logged BIGINT := 0;
BEGIN
    SELECT count(*) INTO changed FROM old_rows o JOIN new_rows n ON n.id = o.id
     WHERE o.due_date IS DISTINCT FROM n.due_date
        OR o.closed_at IS DISTINCT FROM n.closed_at
        OR o.created_at IS DISTINCT FROM n.created_at
        OR ((o.closed_at IS NOT NULL OR n.closed_at IS NOT NULL)
            AND (o.state IS DISTINCT FROM n.state
                 OR o.owner_email IS DISTINCT FROM n.owner_email));
    IF changed > 0 THEN
        SELECT history INTO base FROM action_tally_day WHERE id = 1 FOR UPDATE;
    END IF;
    IF changed > 10000 THEN
        PERFORM coe_action_past_skipped(changed);
    ELSIF changed > 0 THEN
        INSERT INTO action_past_changes (seq, action_id,
               old_owner_email, old_state, old_due_date, old_created_at, old_closed_at,
               new_owner_email, new_state, new_due_date, new_created_at, new_closed_at)
        SELECT base + row_number() OVER (ORDER BY n.id), n.id,
               o.owner_email, o.state, o.due_date, o.created_at, o.closed_at,
               n.owner_email, n.state, n.due_date, n.created_at, n.closed_at
          FROM old_rows o JOIN new_rows n ON n.id = o.id
         WHERE o.due_date IS DISTINCT FROM n.due_date
            OR o.closed_at IS DISTINCT FROM n.closed_at
            OR o.created_at IS DISTINCT FROM n.created_at
            OR ((o.closed_at IS NOT NULL OR n.closed_at IS NOT NULL)
                AND (o.state IS DISTINCT FROM n.state
                     OR o.owner_email IS DISTINCT FROM n.owner_email));
        GET DIAGNOSTICS logged = ROW_COUNT;
        PERFORM coe_action_past_logged(base, logged);
    END IF;
    PERFORM coe_action_tally_apply(
        ARRAY(SELECT o.owner_email FROM old_rows o JOIN new_rows n ON n.id = o.id
               WHERE o.owner_email IS DISTINCT FROM n.owner_email
                  OR o.state IS DISTINCT FROM n.state OR o.due_date IS DISTINCT FROM n.due_date
              UNION
              SELECT n.owner_email FROM old_rows o JOIN new_rows n ON n.id = o.id
               WHERE o.owner_email IS DISTINCT FROM n.owner_email
                  OR o.state IS DISTINCT FROM n.state OR o.due_date IS DISTINCT FROM n.due_date),
        base IS NOT NULL);
    RETURN NULL;
END;
$$;

UPDATE action_tally_day SET history = history + 1 WHERE id = 1;
