DROP TABLE sessions;
DROP TABLE sign_in_requests;
DROP TABLE sign_in_links;
ALTER TABLE people DROP COLUMN is_admin;
