-- Contributing factors, not one root cause: each 5-whys chain is tagged with one of
-- the template's categories (change, configuration, capacity, ...).
ALTER TABLE why_chains ADD COLUMN factor TEXT;
-- The coverage audit and the weekly review read approvals from the audit log by
-- action and time, and the actions closed in a period, on every request.
CREATE INDEX audit_log_by_action ON audit_log (action, at);
CREATE INDEX corrective_actions_by_closed ON corrective_actions (closed_at);
