-- Back to migration 000039's change log (empty: a figure kept by that version counts
-- again, since the history number moves on below).
DROP TABLE figure_snapshots;
DROP TRIGGER action_changes_after_update;
DROP TRIGGER action_changes_after_insert;
DROP TRIGGER action_tally_after_delete;

CREATE TABLE action_past_changes (
    -- `action_tally_day.history` after the change (SQLite: the rowid).
    seq             INTEGER PRIMARY KEY NOT NULL,
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

CREATE TRIGGER action_tally_after_delete AFTER DELETE ON corrective_actions
BEGIN
    INSERT OR REPLACE INTO action_tally (owner_email, open, overdue, oldest_due)
    SELECT OLD.owner_email, count(*), count(*) FILTER (WHERE due_date < (SELECT day FROM action_tally_day WHERE id = 1)), min(due_date)
      FROM corrective_actions WHERE owner_email = OLD.owner_email AND state IN ('open', 'in_progress');
END;

-- An action written open and due from `day` on counts for nothing in the past (every
-- week's end is before its due date): not kept.
CREATE TRIGGER action_past_after_insert AFTER INSERT ON corrective_actions
WHEN NEW.closed_at IS NOT NULL
  OR NEW.due_date < (SELECT day FROM action_tally_day WHERE id = 1)
BEGIN
    UPDATE action_tally_day SET history = history + 1 WHERE id = 1;
    INSERT INTO action_past_changes (seq, action_id, new_owner_email, new_state,
                                     new_due_date, new_created_at, new_closed_at)
    SELECT history, NEW.id, NEW.owner_email, NEW.state, NEW.due_date, NEW.created_at,
           NEW.closed_at
      FROM action_tally_day WHERE id = 1;
    DELETE FROM action_past_changes
     WHERE seq <= (SELECT history FROM action_tally_day WHERE id = 1) - 10000;
END;

CREATE TRIGGER action_past_after_update AFTER UPDATE OF owner_email, state, due_date, created_at, closed_at ON corrective_actions
WHEN OLD.due_date IS NOT NEW.due_date
  OR OLD.closed_at IS NOT NEW.closed_at
  OR OLD.created_at IS NOT NEW.created_at
  OR ((OLD.closed_at IS NOT NULL OR NEW.closed_at IS NOT NULL)
      AND (OLD.state IS NOT NEW.state OR OLD.owner_email IS NOT NEW.owner_email))
BEGIN
    UPDATE action_tally_day SET history = history + 1 WHERE id = 1;
    INSERT INTO action_past_changes (seq, action_id,
                                     old_owner_email, old_state, old_due_date, old_created_at, old_closed_at,
                                     new_owner_email, new_state, new_due_date, new_created_at, new_closed_at)
    SELECT history, NEW.id,
           OLD.owner_email, OLD.state, OLD.due_date, OLD.created_at, OLD.closed_at,
           NEW.owner_email, NEW.state, NEW.due_date, NEW.created_at, NEW.closed_at
      FROM action_tally_day WHERE id = 1;
    DELETE FROM action_past_changes
     WHERE seq <= (SELECT history FROM action_tally_day WHERE id = 1) - 10000;
END;

CREATE TRIGGER action_past_after_delete AFTER DELETE ON corrective_actions
BEGIN
    UPDATE action_tally_day SET history = history + 1 WHERE id = 1;
    INSERT INTO action_past_changes (seq, action_id, old_owner_email, old_state,
                                     old_due_date, old_created_at, old_closed_at)
    SELECT history, OLD.id, OLD.owner_email, OLD.state, OLD.due_date, OLD.created_at,
           OLD.closed_at
      FROM action_tally_day WHERE id = 1;
    DELETE FROM action_past_changes
     WHERE seq <= (SELECT history FROM action_tally_day WHERE id = 1) - 10000;
END;

UPDATE action_tally_day SET history = history + 1 WHERE id = 1;
