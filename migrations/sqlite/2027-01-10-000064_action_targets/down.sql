ALTER TABLE corrective_actions DROP COLUMN past_target_reason;
ALTER TABLE corrective_actions DROP COLUMN target_date;
