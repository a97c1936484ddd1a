-- An incident is detected when its earliest alert started (Alertmanager's startsAt),
-- not when coe received the webhook (that is its created_at). COEs that took their
-- detection from their incident, with no detection written by a person, follow.
UPDATE coes
SET detected_at = (SELECT i.started_at FROM incidents i WHERE i.id = coes.incident_id)
WHERE incident_id IS NOT NULL
  AND detected_at = (SELECT i.detected_at FROM incidents i WHERE i.id = coes.incident_id)
  AND NOT EXISTS (
      SELECT 1 FROM timeline_entries t
      WHERE t.coe_id = coes.id AND t.kind = 'detected' AND t.source IS NULL
  );
UPDATE incidents SET detected_at = started_at WHERE started_at < detected_at;
