-- The times of receipt are kept (incidents.created_at): detection goes back to them.
UPDATE coes
SET detected_at = (SELECT i.created_at FROM incidents i WHERE i.id = coes.incident_id)
WHERE incident_id IS NOT NULL
  AND detected_at = (SELECT i.detected_at FROM incidents i WHERE i.id = coes.incident_id)
  AND NOT EXISTS (
      SELECT 1 FROM timeline_entries t
      WHERE t.coe_id = coes.id AND t.kind = 'detected' AND t.source IS NULL
  );
UPDATE incidents SET detected_at = created_at;
