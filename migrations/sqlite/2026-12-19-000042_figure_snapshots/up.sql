-- The figures about the past (actions closed in 30 and 90 days, the weeks, the
-- actions closed in the coverage audit's period) are a job's output now: the figures
-- job (`jobs::figures`) counts them every few minutes and at a new day into a row
-- here, which the views read with the live counters (`action_tally`). The change log
-- replayed into figures kept in memory (migration 000039) goes.
CREATE TABLE figure_snapshots (
    -- What was counted, for whom (`services::stats::snapshot`).
    name       TEXT PRIMARY KEY NOT NULL,
    -- When the count read the actions.
    counted_at TIMESTAMP NOT NULL,
    -- The figures, as JSON.
    figures    TEXT NOT NULL
);

DROP TRIGGER action_past_after_delete;
DROP TRIGGER action_past_after_update;
DROP TRIGGER action_past_after_insert;
DROP TRIGGER action_tally_after_delete;
DROP TABLE action_past_changes;

-- `action_tally_day.history` still numbers the changes a write's `updated_at` may not
-- show (an action deleted, written with past dates, closed, reopened, its due date
-- or owner moved): the board's and the action list's totals, kept between changes
-- (`stats::PerChange`), are counted again after each.
CREATE TRIGGER action_tally_after_delete AFTER DELETE ON corrective_actions
BEGIN
    UPDATE action_tally_day SET history = history + 1 WHERE id = 1;
    INSERT OR REPLACE INTO action_tally (owner_email, open, overdue, oldest_due)
    SELECT OLD.owner_email, count(*), count(*) FILTER (WHERE due_date < (SELECT day FROM action_tally_day WHERE id = 1)), min(due_date)
      FROM corrective_actions WHERE owner_email = OLD.owner_email AND state IN ('open', 'in_progress');
END;

CREATE TRIGGER action_changes_after_insert AFTER INSERT ON corrective_actions
WHEN NEW.closed_at IS NOT NULL
  OR NEW.due_date < (SELECT day FROM action_tally_day WHERE id = 1)
  OR NEW.created_at < (SELECT day FROM action_tally_day WHERE id = 1)
BEGIN
    UPDATE action_tally_day SET history = history + 1 WHERE id = 1;
END;

CREATE TRIGGER action_changes_after_update AFTER UPDATE OF owner_email, state, due_date, created_at, closed_at ON corrective_actions
WHEN OLD.due_date IS NOT NEW.due_date
  OR OLD.closed_at IS NOT NEW.closed_at
  OR OLD.created_at IS NOT NEW.created_at
  OR ((OLD.closed_at IS NOT NULL OR NEW.closed_at IS NOT NULL)
      AND (OLD.state IS NOT NEW.state OR OLD.owner_email IS NOT NEW.owner_email))
BEGIN
    UPDATE action_tally_day SET history = history + 1 WHERE id = 1;
END;
