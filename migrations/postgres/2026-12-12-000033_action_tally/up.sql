-- Each owner's open and overdue actions, kept by the writes that change them so that
-- the board and the dashboard read one row per owner instead of counting every action.
-- `action_tally_day.day` is the day `overdue` is counted against (due before it); the
-- service moves it to the organisation's today before reading (`services::actions::
-- tally`), recounting only the owners with actions due between the two days.
--
-- The triggers recount the owners' rows from `corrective_actions_by_owner` (owner,
-- state, due date) after every statement that inserts, deletes, or changes an owner,
-- state or due date. Concurrent writers: they take the day row FOR SHARE (the day's
-- move takes it FOR UPDATE), then each owner's row FOR UPDATE, and only then count,
-- each statement with a fresh snapshot: a second writer for the same owner waits for
-- the first to commit and counts its rows too.
CREATE TABLE action_tally_day (
    id      INTEGER PRIMARY KEY CHECK (id = 1),
    day     DATE NOT NULL,
    -- Changes to what the figures about the past count: an action closed, reopened or
    -- deleted, a due date moved, a closed action given to another owner, an action
    -- written closed or dated before `day`. The caches of those figures are keyed on it
    -- (`stats::cache::history_generation`), so a new action or one started keeps them. Such
    -- changes are made by people one at a time: they take this row FOR UPDATE.
    history BIGINT NOT NULL DEFAULT 0
);
INSERT INTO action_tally_day (id, day) VALUES (1, current_date);

CREATE TABLE action_tally (
    owner_email TEXT PRIMARY KEY,
    -- Open or in progress.
    open        BIGINT NOT NULL,
    -- Open or in progress and due before `action_tally_day.day`.
    overdue     BIGINT NOT NULL,
    -- The earliest due date of the open ones.
    oldest_due  DATE
);

CREATE VIEW action_tally_counted AS
SELECT o.owner_email AS owner_email,
       (SELECT count(*) FROM corrective_actions c
         WHERE c.owner_email = o.owner_email AND c.state IN ('open', 'in_progress')) AS open,
       (SELECT count(*) FROM corrective_actions c
         WHERE c.owner_email = o.owner_email AND c.state IN ('open', 'in_progress')
           AND c.due_date < (SELECT day FROM action_tally_day WHERE id = 1)) AS overdue,
       (SELECT min(c.due_date) FROM corrective_actions c
         WHERE c.owner_email = o.owner_email AND c.state IN ('open', 'in_progress')) AS oldest_due
  FROM (SELECT DISTINCT owner_email FROM corrective_actions) o;

INSERT INTO action_tally (owner_email, open, overdue, oldest_due)
SELECT owner_email, open, overdue, oldest_due FROM action_tally_counted WHERE open > 0;

-- Recounts one owner's row (the caller holds the day row FOR SHARE or FOR UPDATE).
CREATE FUNCTION coe_action_tally_recount(who TEXT) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO action_tally (owner_email, open, overdue) VALUES (who, 0, 0)
        ON CONFLICT (owner_email) DO NOTHING;
    PERFORM 1 FROM action_tally WHERE owner_email = who FOR UPDATE;
    UPDATE action_tally t
       SET open = c.open, overdue = c.overdue, oldest_due = c.oldest_due
      FROM (SELECT count(*) AS open,
                   count(*) FILTER (WHERE a.due_date < (SELECT day FROM action_tally_day WHERE id = 1)) AS overdue,
                   min(a.due_date) AS oldest_due
              FROM corrective_actions a
             WHERE a.owner_email = who AND a.state IN ('open', 'in_progress')) c
     WHERE t.owner_email = who;
END;
$$;

-- Once per statement (a bulk load recounts each owner once, not once per row): the
-- day row is taken FOR UPDATE when the past changed (`history`), else FOR SHARE; then
-- each owner's row, in order, so that two statements cannot deadlock on them.
CREATE FUNCTION coe_action_tally_apply(owners TEXT[], past_changed BOOLEAN) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    who TEXT;
BEGIN
    IF past_changed THEN
        UPDATE action_tally_day SET history = history + 1 WHERE id = 1;
    ELSIF cardinality(owners) > 0 THEN
        PERFORM 1 FROM action_tally_day WHERE id = 1 FOR SHARE;
    END IF;
    FOR who IN SELECT DISTINCT o FROM unnest(owners) o ORDER BY o LOOP
        PERFORM coe_action_tally_recount(who);
    END LOOP;
END;
$$;

CREATE FUNCTION coe_action_tally_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM coe_action_tally_apply(
        ARRAY(SELECT DISTINCT owner_email FROM new_rows),
        EXISTS (SELECT 1 FROM new_rows n, action_tally_day d
                 WHERE d.id = 1 AND (n.closed_at IS NOT NULL OR n.due_date < d.day
                                     OR n.created_at < d.day)));
    RETURN NULL;
END;
$$;

CREATE FUNCTION coe_action_tally_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM coe_action_tally_apply(
        ARRAY(SELECT DISTINCT owner_email FROM old_rows),
        EXISTS (SELECT 1 FROM old_rows));
    RETURN NULL;
END;
$$;

CREATE FUNCTION coe_action_tally_updated() RETURNS trigger LANGUAGE plpgsql AS $$
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
                 WHERE o.due_date IS DISTINCT FROM n.due_date
                    OR o.closed_at IS DISTINCT FROM n.closed_at
                    OR ((o.closed_at IS NOT NULL OR n.closed_at IS NOT NULL)
                        AND (o.state IS DISTINCT FROM n.state
                             OR o.owner_email IS DISTINCT FROM n.owner_email))));
    RETURN NULL;
END;
$$;

-- (A trigger with transition tables takes one event and no column list.)
CREATE TRIGGER action_tally_after_insert AFTER INSERT ON corrective_actions
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION coe_action_tally_inserted();
CREATE TRIGGER action_tally_after_delete AFTER DELETE ON corrective_actions
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION coe_action_tally_deleted();
CREATE TRIGGER action_tally_after_update AFTER UPDATE ON corrective_actions
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION coe_action_tally_updated();
