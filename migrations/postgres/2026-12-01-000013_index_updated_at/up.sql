-- The overdue board caches its totals until the last change to any action or person:
-- finding that change reads one index entry, not every row.
CREATE INDEX corrective_actions_by_updated ON corrective_actions (updated_at);
CREATE INDEX people_by_updated ON people (updated_at);
