ALTER TABLE notification_settings DROP COLUMN reach;
