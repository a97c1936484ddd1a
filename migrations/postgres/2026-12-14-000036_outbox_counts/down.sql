DROP TRIGGER outbox_counts_after_delete ON outbox_emails;
DROP TRIGGER outbox_counts_after_update ON outbox_emails;
DROP TRIGGER outbox_counts_after_insert ON outbox_emails;
DROP FUNCTION coe_outbox_counts_deleted();
DROP FUNCTION coe_outbox_counts_updated();
DROP FUNCTION coe_outbox_counts_inserted();
DROP TABLE outbox_count_changes;
DROP TABLE outbox_counts;
