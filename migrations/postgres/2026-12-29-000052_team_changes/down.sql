DROP TABLE team_changes;
