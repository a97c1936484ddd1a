-- Merged drafts become closed ones; the state's CHECK loses `merged` again (the same
-- procedure as up.sql, the DROP COLUMN after it bumping the schema version).
UPDATE coes SET state = 'closed' WHERE state = 'merged';
PRAGMA writable_schema = ON;
UPDATE sqlite_schema
   SET sql = replace(sql,
                     'CHECK (state IN (''draft'', ''in_review'', ''approved'', ''closed'', ''merged''))',
                     'CHECK (state IN (''draft'', ''in_review'', ''approved'', ''closed''))')
 WHERE type = 'table' AND name = 'coes';
PRAGMA writable_schema = RESET;
ALTER TABLE coes DROP COLUMN merged_into;
