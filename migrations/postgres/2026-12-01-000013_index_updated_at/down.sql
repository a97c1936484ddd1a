DROP INDEX people_by_updated;
DROP INDEX corrective_actions_by_updated;
