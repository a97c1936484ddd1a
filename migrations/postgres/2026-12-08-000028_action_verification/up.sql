-- For COEs at or above coe.verify_actions_from, the COE's reviewer verifies each done
-- action against its success criteria; the COE closes only when every action is
-- verified or won't be done.
ALTER TABLE corrective_actions ADD COLUMN verified_at TIMESTAMP;
ALTER TABLE corrective_actions ADD COLUMN verified_by TEXT;
