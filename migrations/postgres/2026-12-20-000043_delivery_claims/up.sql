-- Which replica claimed an email or a chat message being sent (`server.replica_name`):
-- a replica that starts gives back at once what its dead predecessor of the same name
-- held, instead of leaving it to the lease.
ALTER TABLE outbox_emails ADD COLUMN claimed_by TEXT;
ALTER TABLE chat_messages ADD COLUMN claimed_by TEXT;
