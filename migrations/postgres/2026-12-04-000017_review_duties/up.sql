-- Separation of duties in the review: who submitted the current review round and who
-- named the current reviewer (the email of a person, or `token:NAME`), so that nobody
-- approves a round they submitted or a COE they named themselves reviewer of.
ALTER TABLE coes ADD COLUMN submitted_by TEXT;
ALTER TABLE coes ADD COLUMN reviewer_named_by TEXT;
-- The round under way: its submitter is the author of the latest submission.
UPDATE coes SET submitted_by = (
    SELECT r.author FROM review_comments r
    WHERE r.coe_id = coes.id AND r.verdict = 'submitted'
    ORDER BY r.created_at DESC, r.id DESC
    LIMIT 1
);
