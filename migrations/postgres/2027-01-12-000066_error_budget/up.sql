-- The error budget decides: the largest share of an SLO's error budget an incident's
-- events said they burned (0.25 = a quarter), and the SLO's name. An incident that
-- burned more than `policy.error_budget_share` needs a COE whatever its severity.
ALTER TABLE incidents ADD COLUMN budget_burned DOUBLE PRECISION;
ALTER TABLE incidents ADD COLUMN slo TEXT;
