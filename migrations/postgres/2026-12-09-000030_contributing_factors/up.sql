-- Contributing factors, not one root cause: each 5-whys chain is tagged with one of
-- the template's categories (change, configuration, capacity, ...).
ALTER TABLE why_chains ADD COLUMN factor TEXT;
