-- Two more states of an email: `held` (it was being sent when the backup a restore put
-- back was taken: it may have gone out, so an admin sends it again or drops it) and
-- `dropped` (an admin chose not to send it). `services::outbox::restored`.
INSERT INTO outbox_counts (state, n) VALUES ('held', 0), ('dropped', 0);
ALTER TABLE outbox_emails DROP CONSTRAINT outbox_emails_state_check;
ALTER TABLE outbox_emails ADD CONSTRAINT outbox_emails_state_check
    CHECK (state IN ('pending', 'sending', 'sent', 'failed', 'held', 'dropped'));

-- Facts about the database itself. `outbox_emails_oid` names the outbox's table as
-- this database made it: a restore from a dump (`pg_restore`, `psql < dump.sql`)
-- makes the table again under another object id while this row keeps the old one,
-- which is how a replica that starts knows the database was restored
-- (`db::marks`). `pg_upgrade` keeps tables' object ids.
CREATE TABLE database_marks (
    name  TEXT PRIMARY KEY NOT NULL,
    value TEXT NOT NULL
);
INSERT INTO database_marks (name, value)
VALUES ('outbox_emails_oid', CAST(CAST('outbox_emails'::regclass AS oid) AS TEXT));
