ALTER TABLE outbox_emails DROP COLUMN calendar;
DROP TABLE review_meetings;
