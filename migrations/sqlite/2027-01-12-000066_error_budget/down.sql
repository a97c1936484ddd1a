ALTER TABLE incidents DROP COLUMN slo;
ALTER TABLE incidents DROP COLUMN budget_burned;
