DROP TABLE action_recurrences;
