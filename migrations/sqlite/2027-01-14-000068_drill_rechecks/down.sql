DROP TABLE drill_rechecks;
DROP TABLE drill_alarms;
