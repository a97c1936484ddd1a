DROP TRIGGER outbox_counts_after_delete;
DROP TRIGGER outbox_counts_after_update;
DROP TRIGGER outbox_counts_after_insert;
DROP TABLE outbox_count_changes;
DROP TABLE outbox_counts;
