-- Targets by priority (`[[actions.targets]]`): the day an action is to close by, set
-- when it is added (and again when its priority changes), and the reason given when
-- its due date was chosen past it.
ALTER TABLE corrective_actions ADD COLUMN target_date DATE;
ALTER TABLE corrective_actions ADD COLUMN past_target_reason TEXT;
