ALTER TABLE audit_log DROP COLUMN via;
DROP TABLE chat_links;
DROP TABLE chat_requests;
