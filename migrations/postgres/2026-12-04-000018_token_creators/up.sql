-- Who made each API token (a person's email, or `token:NAME`); NULL for tokens made
-- from the command line (the operator) or before this version. A token made by
-- someone else for a person does not act as that person in the review.
ALTER TABLE api_tokens ADD COLUMN created_by TEXT;
