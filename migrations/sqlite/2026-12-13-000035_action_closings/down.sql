DROP TRIGGER action_closing_after_update;
DROP TRIGGER action_history_after_update;

CREATE TRIGGER action_history_after_update AFTER UPDATE OF owner_email, state, due_date, closed_at ON corrective_actions
WHEN OLD.due_date IS NOT NEW.due_date
  OR OLD.closed_at IS NOT NEW.closed_at
  OR ((OLD.closed_at IS NOT NULL OR NEW.closed_at IS NOT NULL)
      AND (OLD.state IS NOT NEW.state OR OLD.owner_email IS NOT NEW.owner_email))
BEGIN
    UPDATE action_tally_day SET history = history + 1 WHERE id = 1;
END;

-- The closings counted apart become changes to the past again.
UPDATE action_tally_day SET history = history + closings + 1 WHERE id = 1;
ALTER TABLE action_tally_day DROP COLUMN closings;
