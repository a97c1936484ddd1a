-- A draft folded into another COE of the same outage ends in state `merged`, naming
-- the COE it went into.
--
-- The state's CHECK constraint gains `merged`. SQLite cannot alter a constraint, and
-- rebuilding `coes` inside the migration's transaction would cascade deletes into
-- every table that references it (foreign keys cannot be switched off there). A
-- relaxed CHECK changes nothing on disk, so the table's definition is edited in place
-- (the procedure of SQLite's "ALTER TABLE" page, section 7), `writable_schema = RESET`
-- makes this connection read it again at once, and the ALTER TABLE that follows bumps
-- the schema version so that every other connection reads it again too.
PRAGMA writable_schema = ON;
UPDATE sqlite_schema
   SET sql = replace(sql,
                     'CHECK (state IN (''draft'', ''in_review'', ''approved'', ''closed''))',
                     'CHECK (state IN (''draft'', ''in_review'', ''approved'', ''closed'', ''merged''))')
 WHERE type = 'table' AND name = 'coes';
PRAGMA writable_schema = RESET;
ALTER TABLE coes ADD COLUMN merged_into TEXT;
