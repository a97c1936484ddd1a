DROP INDEX corrective_actions_by_closed;
DROP INDEX audit_log_by_action;
ALTER TABLE why_chains DROP COLUMN factor;
