-- A page of open (or in-progress) actions in due-date order reads its first rows
-- straight from this index: with the id in it, rows due the same day need no sort.
DROP INDEX corrective_actions_by_state_due;
CREATE INDEX corrective_actions_by_state_due ON corrective_actions (state, due_date, id);
