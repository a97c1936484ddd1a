-- Each owner's open and overdue actions, kept by the writes that change them so that
-- the board and the dashboard read one row per owner instead of counting every action.
-- `action_tally_day.day` is the day `overdue` is counted against (due before it); the
-- service moves it to the organisation's today before reading (`services::actions::
-- tally`), recounting only the owners with actions due between the two days.
--
-- The trigger recounts the owner's row from `corrective_actions_by_owner` (owner,
-- state, due date) after every insert, delete, and change of owner, state or due date.
-- Concurrent writers: it takes the day row FOR SHARE (the day's move takes it FOR
-- UPDATE), then the owner's row FOR UPDATE, and only then counts, each statement with
-- a fresh snapshot: a second writer for the same owner waits for the first to commit
-- and counts its rows too.
CREATE TABLE action_tally_day (
    id      INTEGER PRIMARY KEY CHECK (id = 1),
    day     DATE NOT NULL,
    -- Changes to what the figures about the past count: an action closed, reopened or
    -- deleted, a due date moved, a closed action given to another owner, an action
    -- written closed or dated before `day`. The caches of those figures are keyed on it
    -- (`stats::history_generation`), so a new action or one started keeps them. Such
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

CREATE FUNCTION coe_action_tally() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    count_again BOOLEAN;
    past_changed BOOLEAN;
BEGIN
    IF TG_OP = 'INSERT' THEN
        count_again := TRUE;
        past_changed := NEW.closed_at IS NOT NULL
            OR NEW.due_date < (SELECT day FROM action_tally_day WHERE id = 1)
            OR NEW.created_at < (SELECT day FROM action_tally_day WHERE id = 1);
    ELSIF TG_OP = 'DELETE' THEN
        count_again := TRUE;
        past_changed := TRUE;
    ELSE
        count_again := OLD.owner_email IS DISTINCT FROM NEW.owner_email
            OR OLD.state IS DISTINCT FROM NEW.state
            OR OLD.due_date IS DISTINCT FROM NEW.due_date;
        past_changed := OLD.due_date IS DISTINCT FROM NEW.due_date
            OR OLD.closed_at IS DISTINCT FROM NEW.closed_at
            OR ((OLD.closed_at IS NOT NULL OR NEW.closed_at IS NOT NULL)
                AND (OLD.state IS DISTINCT FROM NEW.state
                     OR OLD.owner_email IS DISTINCT FROM NEW.owner_email));
    END IF;
    IF NOT count_again AND NOT past_changed THEN
        RETURN NULL;
    END IF;
    IF past_changed THEN
        UPDATE action_tally_day SET history = history + 1 WHERE id = 1;
    ELSE
        PERFORM 1 FROM action_tally_day WHERE id = 1 FOR SHARE;
    END IF;
    IF NOT count_again THEN
        RETURN NULL;
    ELSIF TG_OP = 'INSERT' THEN
        PERFORM coe_action_tally_recount(NEW.owner_email);
    ELSIF TG_OP = 'DELETE' THEN
        PERFORM coe_action_tally_recount(OLD.owner_email);
    ELSIF OLD.owner_email = NEW.owner_email THEN
        PERFORM coe_action_tally_recount(NEW.owner_email);
    ELSE
        -- Both owners, in one order, so that two moves between them cannot deadlock.
        PERFORM coe_action_tally_recount(LEAST(OLD.owner_email, NEW.owner_email));
        PERFORM coe_action_tally_recount(GREATEST(OLD.owner_email, NEW.owner_email));
    END IF;
    RETURN NULL;
END;
$$;

CREATE TRIGGER action_tally_after_change
    AFTER INSERT OR DELETE OR UPDATE OF owner_email, state, due_date, closed_at ON corrective_actions
    FOR EACH ROW EXECUTE FUNCTION coe_action_tally();
