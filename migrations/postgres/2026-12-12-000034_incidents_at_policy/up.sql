-- The coverage audit (the dashboard, /api/v1/stats, the weekly inspection) reads the
-- incidents of a period that met the COE policy on every view; without this it read
-- every incident of the period (100,000 after an ingest storm) to keep the few at
-- policy. Only incidents at policy have an entry.
CREATE INDEX incidents_at_policy ON incidents (started_at, id) WHERE coe_required_at IS NOT NULL;
