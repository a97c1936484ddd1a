DROP FUNCTION coe_action_past_logged(BIGINT, BIGINT);
DROP FUNCTION coe_action_past_skipped(BIGINT);

-- The functions as migration 000035 made them.
CREATE FUNCTION coe_action_tally_apply(owners TEXT[], past_changed BOOLEAN, closed BIGINT)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    who TEXT;
BEGIN
    IF past_changed OR closed > 0 THEN
        UPDATE action_tally_day
           SET history = history + CASE WHEN past_changed THEN 1 ELSE 0 END,
               closings = closings + closed
         WHERE id = 1;
    ELSIF cardinality(owners) > 0 THEN
        PERFORM 1 FROM action_tally_day WHERE id = 1 FOR SHARE;
    END IF;
    FOR who IN SELECT DISTINCT o FROM unnest(owners) o ORDER BY o LOOP
        PERFORM coe_action_tally_recount(who);
    END LOOP;
END;
$$;

CREATE OR REPLACE FUNCTION coe_action_tally_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM coe_action_tally_apply(
        ARRAY(SELECT DISTINCT owner_email FROM new_rows),
        EXISTS (SELECT 1 FROM new_rows n, action_tally_day d
                 WHERE d.id = 1 AND (n.closed_at IS NOT NULL OR n.due_date < d.day
                                     OR n.created_at < d.day)),
        0);
    RETURN NULL;
END;
$$;

CREATE OR REPLACE FUNCTION coe_action_tally_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM coe_action_tally_apply(
        ARRAY(SELECT DISTINCT owner_email FROM old_rows),
        EXISTS (SELECT 1 FROM old_rows),
        0);
    RETURN NULL;
END;
$$;

CREATE OR REPLACE FUNCTION coe_action_tally_updated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM coe_action_tally_apply(
        ARRAY(SELECT o.owner_email FROM old_rows o JOIN new_rows n ON n.id = o.id
               WHERE o.owner_email IS DISTINCT FROM n.owner_email
                  OR o.state IS DISTINCT FROM n.state OR o.due_date IS DISTINCT FROM n.due_date
              UNION
              SELECT n.owner_email FROM old_rows o JOIN new_rows n ON n.id = o.id
               WHERE o.owner_email IS DISTINCT FROM n.owner_email
                  OR o.state IS DISTINCT FROM n.state OR o.due_date IS DISTINCT FROM n.due_date),
        EXISTS (SELECT 1 FROM old_rows o JOIN new_rows n ON n.id = o.id
                 WHERE (o.due_date IS DISTINCT FROM n.due_date
                        OR o.closed_at IS DISTINCT FROM n.closed_at
                        OR ((o.closed_at IS NOT NULL OR n.closed_at IS NOT NULL)
                            AND (o.state IS DISTINCT FROM n.state
                                 OR o.owner_email IS DISTINCT FROM n.owner_email)))
                   AND NOT (o.closed_at IS NULL AND n.closed_at IS NOT NULL
                            AND o.due_date IS NOT DISTINCT FROM n.due_date
                            AND o.owner_email IS NOT DISTINCT FROM n.owner_email
                            AND o.created_at IS NOT DISTINCT FROM n.created_at)),
        (SELECT count(*) FROM old_rows o JOIN new_rows n ON n.id = o.id
          WHERE o.closed_at IS NULL AND n.closed_at IS NOT NULL
            AND o.due_date IS NOT DISTINCT FROM n.due_date
            AND o.owner_email IS NOT DISTINCT FROM n.owner_email
            AND o.created_at IS NOT DISTINCT FROM n.created_at));
    RETURN NULL;
END;
$$;

DROP FUNCTION coe_action_tally_apply(TEXT[], BOOLEAN);
DROP TABLE action_past_changes;

-- A figure kept by the previous version counts again.
UPDATE action_tally_day SET history = history + 1 WHERE id = 1;
