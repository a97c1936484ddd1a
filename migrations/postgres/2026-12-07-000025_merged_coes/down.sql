-- Merged drafts become closed ones; the state's CHECK loses `merged` again.
UPDATE coes SET state = 'closed' WHERE state = 'merged';
ALTER TABLE coes DROP COLUMN merged_into;
ALTER TABLE coes DROP CONSTRAINT coes_state_check;
ALTER TABLE coes ADD CONSTRAINT coes_state_check
    CHECK (state IN ('draft', 'in_review', 'approved', 'closed'));
