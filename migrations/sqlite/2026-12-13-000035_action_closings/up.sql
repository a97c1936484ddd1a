-- A plain closing (an open action set done or won't do, its owner and due date kept)
-- no longer counts as a change to the past (`history`): it is counted apart
-- (`closings`), so the caches of the figures about the past add the actions closed
-- since they counted instead of reading every action closed in 90 days again
-- (`stats::cache::Past`). Every other change to the past still counts in `history`.
ALTER TABLE action_tally_day ADD COLUMN closings BIGINT NOT NULL DEFAULT 0;

DROP TRIGGER action_history_after_update;

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
