-- Where a person's reminders, assignments, review requests and verifications reach
-- them: by email (the default), as a direct message in Slack (`chat`; the email
-- waits half an hour and goes only if the message could not be delivered), or both.
ALTER TABLE notification_settings ADD COLUMN reach TEXT NOT NULL DEFAULT 'email';
