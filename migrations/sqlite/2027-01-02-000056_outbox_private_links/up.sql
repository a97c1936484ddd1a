-- A link only its recipient may see (a sign-in link), kept apart from what the email
-- says: the stored text and HTML hold a placeholder where it goes, put back only in
-- the message handed to the SMTP server, so that nobody reads it in the outbox.
-- Emptied once the email is sent or dropped, like `unsubscribe_token`.
ALTER TABLE outbox_emails ADD COLUMN private_link TEXT;

-- Unsubscribe tokens of emails already sent or dropped have done their work.
UPDATE outbox_emails SET unsubscribe_token = NULL WHERE state IN ('sent', 'dropped');
