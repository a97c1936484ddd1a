ALTER TABLE outbox_emails DROP COLUMN unsubscribe_token;
DROP TABLE unsubscribe_links;
DROP TABLE notification_settings;
