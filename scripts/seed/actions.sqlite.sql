-- Seeding for scripts/measure-pages and scripts/bench (bulk SQL, not the API).
-- Actions :first to :last over the 10,000 owners and COEs: one in ten overdue, one in
-- two hundred due soon, one in ten done.
WITH RECURSIVE n(i) AS (SELECT :first UNION ALL SELECT i + 1 FROM n WHERE i < :last)
INSERT INTO corrective_actions (id, coe_id, title, owner_email, due_date, priority, kind, state,
                                due_date_change_count, created_by, created_at, updated_at, closed_at)
  SELECT 'act-' || i, 'coe-' || (i % 10000), 'Seeded action ' || i, 'owner' || (i % 10000) || '@example.com',
         CASE WHEN i % 10 = 0 THEN date('now', '-' || (1 + i % 60) || ' days')
              WHEN i % 200 = 1 THEN date('now', '+' || (i % 3) || ' days')
              ELSE date('now', '+' || (5 + i % 90) || ' days') END,
         CASE i % 3 WHEN 0 THEN 'high' WHEN 1 THEN 'medium' ELSE 'low' END,
         CASE i % 5 WHEN 0 THEN 'detect' WHEN 1 THEN 'diagnose' WHEN 2 THEN 'mitigate' WHEN 3 THEN 'prevent' ELSE 'process' END,
         CASE WHEN i % 10 = 5 THEN 'done' ELSE 'open' END, 0, 'seed',
         datetime('now', '-100 days'), datetime('now', '-100 days'),
         CASE WHEN i % 10 = 5 THEN datetime('now', '-' || (i % 80) || ' days') END
  FROM n;
ANALYZE;
