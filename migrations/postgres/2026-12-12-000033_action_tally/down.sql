DROP TRIGGER action_tally_after_change ON corrective_actions;
DROP FUNCTION coe_action_tally();
DROP FUNCTION coe_action_tally_recount(TEXT);
DROP VIEW action_tally_counted;
DROP TABLE action_tally;
DROP TABLE action_tally_day;
