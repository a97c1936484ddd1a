DROP TRIGGER action_past_after_delete;
DROP TRIGGER action_past_after_update;
DROP TRIGGER action_past_after_insert;
DROP TRIGGER action_tally_after_delete;
DROP TABLE action_past_changes;

-- The triggers as migrations 000033 and 000035 left them.
CREATE TRIGGER action_tally_after_delete AFTER DELETE ON corrective_actions
BEGIN
    UPDATE action_tally_day SET history = history + 1 WHERE id = 1;
    INSERT OR REPLACE INTO action_tally (owner_email, open, overdue, oldest_due)
    SELECT OLD.owner_email, count(*), count(*) FILTER (WHERE due_date < (SELECT day FROM action_tally_day WHERE id = 1)), min(due_date)
      FROM corrective_actions WHERE owner_email = OLD.owner_email AND state IN ('open', 'in_progress');
END;

CREATE TRIGGER action_history_after_insert AFTER INSERT ON corrective_actions
WHEN NEW.closed_at IS NOT NULL
  OR NEW.due_date < (SELECT day FROM action_tally_day WHERE id = 1)
  OR NEW.created_at < (SELECT day FROM action_tally_day WHERE id = 1)
BEGIN
    UPDATE action_tally_day SET history = history + 1 WHERE id = 1;
END;

CREATE TRIGGER action_history_after_update AFTER UPDATE OF owner_email, state, due_date, closed_at ON corrective_actions
WHEN (OLD.due_date IS NOT NEW.due_date
      OR OLD.closed_at IS NOT NEW.closed_at
      OR ((OLD.closed_at IS NOT NULL OR NEW.closed_at IS NOT NULL)
          AND (OLD.state IS NOT NEW.state OR OLD.owner_email IS NOT NEW.owner_email)))
 AND NOT (OLD.closed_at IS NULL AND NEW.closed_at IS NOT NULL
          AND OLD.due_date IS NEW.due_date AND OLD.owner_email IS NEW.owner_email
          AND OLD.created_at IS NEW.created_at)
BEGIN
    UPDATE action_tally_day SET history = history + 1 WHERE id = 1;
END;

CREATE TRIGGER action_closing_after_update AFTER UPDATE OF closed_at ON corrective_actions
WHEN OLD.closed_at IS NULL AND NEW.closed_at IS NOT NULL
 AND OLD.due_date IS NEW.due_date AND OLD.owner_email IS NEW.owner_email
 AND OLD.created_at IS NEW.created_at
BEGIN
    UPDATE action_tally_day SET closings = closings + 1 WHERE id = 1;
END;

-- A figure kept by the previous version counts again.
UPDATE action_tally_day SET history = history + 1 WHERE id = 1;
