DROP TRIGGER action_history_after_update;
DROP TRIGGER action_history_after_insert;
DROP TRIGGER action_tally_after_update;
DROP TRIGGER action_tally_after_delete;
DROP TRIGGER action_tally_after_insert;
DROP VIEW action_tally_counted;
DROP TABLE action_tally;
DROP TABLE action_tally_day;
