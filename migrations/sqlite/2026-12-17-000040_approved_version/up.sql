-- The version of the COE the standing first approval (`approved_by`) was given to:
-- a change to the writeup or its actions after it withdraws that approval, so that
-- a COE is approved only as both approvers read it.
ALTER TABLE coes ADD COLUMN approved_version INTEGER;
UPDATE coes SET approved_version = version WHERE approved_by IS NOT NULL;
