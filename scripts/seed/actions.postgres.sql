-- Seeding for scripts/measure-pages and scripts/bench (bulk SQL, not the API).
-- Actions :first to :last over the 10,000 owners and COEs: one in ten overdue, one in
-- two hundred due soon, one in ten done.
INSERT INTO corrective_actions (id, coe_id, title, owner_email, due_date, priority, kind, state,
                                due_date_change_count, created_by, created_at, updated_at, closed_at)
  SELECT 'act-' || i, 'coe-' || (i % 10000), 'Seeded action ' || i, 'owner' || (i % 10000) || '@example.com',
         CASE WHEN i % 10 = 0 THEN current_date - (1 + i % 60)
              WHEN i % 200 = 1 THEN current_date + (i % 3)
              ELSE current_date + (5 + i % 90) END,
         (ARRAY['high','medium','low'])[1 + i % 3],
         (ARRAY['detect','diagnose','mitigate','prevent','process'])[1 + i % 5],
         CASE WHEN i % 10 = 5 THEN 'done' ELSE 'open' END, 0, 'seed',
         now() - interval '100 days', now() - interval '100 days',
         CASE WHEN i % 10 = 5 THEN now() - ((i % 80) || ' days')::interval END
  FROM generate_series(:first, :last) i;
ANALYZE;
