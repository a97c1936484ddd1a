-- Each owner's open and overdue actions, kept by the writes that change them so that
-- the board and the dashboard read one row per owner instead of counting every action.
-- `action_tally_day.day` is the day `overdue` is counted against (due before it); the
-- service moves it to the organisation's today before reading (`services::actions::
-- tally`), recounting only the owners with actions due between the two days.
--
-- The triggers recount the owner's row from `corrective_actions_by_owner` (owner,
-- state, due date) after every insert, delete, and change of owner, state or due date.
-- A migration that rebuilds `corrective_actions` drops them: it must create them again.
CREATE TABLE action_tally_day (
    id      INTEGER PRIMARY KEY NOT NULL CHECK (id = 1),
    day     DATE NOT NULL,
    -- Changes to what the figures about the past count: an action closed, reopened or
    -- deleted, a due date moved, a closed action given to another owner, an action
    -- written closed or dated before `day`. The caches of those figures are keyed on it
    -- (`stats::cache::history_generation`), so a new action or one started keeps them.
    history BIGINT NOT NULL DEFAULT 0
);
INSERT INTO action_tally_day (id, day) VALUES (1, date('now'));

CREATE TABLE action_tally (
    owner_email TEXT PRIMARY KEY NOT NULL,
    -- Open or in progress.
    open        BIGINT NOT NULL,
    -- Open or in progress and due before `action_tally_day.day`.
    overdue     BIGINT NOT NULL,
    -- The earliest due date of the open ones.
    oldest_due  DATE
) WITHOUT ROWID;

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

CREATE TRIGGER action_tally_after_insert AFTER INSERT ON corrective_actions
BEGIN
    INSERT OR REPLACE INTO action_tally (owner_email, open, overdue, oldest_due)
    SELECT NEW.owner_email, count(*), count(*) FILTER (WHERE due_date < (SELECT day FROM action_tally_day WHERE id = 1)), min(due_date)
      FROM corrective_actions WHERE owner_email = NEW.owner_email AND state IN ('open', 'in_progress');
END;

CREATE TRIGGER action_tally_after_delete AFTER DELETE ON corrective_actions
BEGIN
    UPDATE action_tally_day SET history = history + 1 WHERE id = 1;
    INSERT OR REPLACE INTO action_tally (owner_email, open, overdue, oldest_due)
    SELECT OLD.owner_email, count(*), count(*) FILTER (WHERE due_date < (SELECT day FROM action_tally_day WHERE id = 1)), min(due_date)
      FROM corrective_actions WHERE owner_email = OLD.owner_email AND state IN ('open', 'in_progress');
END;

CREATE TRIGGER action_tally_after_update AFTER UPDATE OF owner_email, state, due_date ON corrective_actions
WHEN OLD.owner_email IS NOT NEW.owner_email OR OLD.state IS NOT NEW.state OR OLD.due_date IS NOT NEW.due_date
BEGIN
    INSERT OR REPLACE INTO action_tally (owner_email, open, overdue, oldest_due)
    SELECT OLD.owner_email, count(*), count(*) FILTER (WHERE due_date < (SELECT day FROM action_tally_day WHERE id = 1)), min(due_date)
      FROM corrective_actions WHERE owner_email = OLD.owner_email AND state IN ('open', 'in_progress');
    INSERT OR REPLACE INTO action_tally (owner_email, open, overdue, oldest_due)
    SELECT * FROM (
        SELECT NEW.owner_email, count(*), count(*) FILTER (WHERE due_date < (SELECT day FROM action_tally_day WHERE id = 1)), min(due_date)
          FROM corrective_actions WHERE owner_email = NEW.owner_email AND state IN ('open', 'in_progress'))
     WHERE OLD.owner_email IS NOT NEW.owner_email;
END;

CREATE TRIGGER action_history_after_insert AFTER INSERT ON corrective_actions
WHEN NEW.closed_at IS NOT NULL
  OR NEW.due_date < (SELECT day FROM action_tally_day WHERE id = 1)
  OR NEW.created_at < (SELECT day FROM action_tally_day WHERE id = 1)
BEGIN
    UPDATE action_tally_day SET history = history + 1 WHERE id = 1;
END;

CREATE TRIGGER action_history_after_update AFTER UPDATE OF owner_email, state, due_date, closed_at ON corrective_actions
WHEN OLD.due_date IS NOT NEW.due_date
  OR OLD.closed_at IS NOT NEW.closed_at
  OR ((OLD.closed_at IS NOT NULL OR NEW.closed_at IS NOT NULL)
      AND (OLD.state IS NOT NEW.state OR OLD.owner_email IS NOT NEW.owner_email))
BEGIN
    UPDATE action_tally_day SET history = history + 1 WHERE id = 1;
END;
