DROP INDEX corrective_actions_by_state_due;
CREATE INDEX corrective_actions_by_state_due ON corrective_actions (state, due_date);
