-- Raw webhook bodies older than webhooks.keep_raw_days are emptied by the sweep:
-- finding them reads the old end of this index, not every delivery.
CREATE INDEX webhook_deliveries_by_received ON webhook_deliveries (received_at);
