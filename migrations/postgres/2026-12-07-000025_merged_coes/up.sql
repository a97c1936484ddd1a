-- A draft folded into another COE of the same outage ends in state `merged`, naming
-- the COE it went into.
ALTER TABLE coes DROP CONSTRAINT coes_state_check;
ALTER TABLE coes ADD CONSTRAINT coes_state_check
    CHECK (state IN ('draft', 'in_review', 'approved', 'closed', 'merged'));
ALTER TABLE coes ADD COLUMN merged_into TEXT;
