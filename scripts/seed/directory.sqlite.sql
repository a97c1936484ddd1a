-- Seeding for scripts/measure-pages and scripts/bench (bulk SQL, not the API).
-- 10,000 people in 100 teams and 10,000 COEs in every state.
PRAGMA journal_mode=WAL;
WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 9999)
INSERT INTO people (email, name, team, created_at, updated_at)
  SELECT 'owner' || i || '@example.com', 'Owner ' || i, 'team-' || (i % 100), datetime('now'), datetime('now') FROM n;
WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 9999)
INSERT INTO coes (id, title, service, severity, state, owner_email, template, template_name,
                  template_version, links, version, created_by, created_at, updated_at)
  SELECT 'coe-' || i, 'Seeded COE ' || i, 'service-' || (i % 50), 1 + i % 5,
         CASE i % 4 WHEN 0 THEN 'draft' WHEN 1 THEN 'in_review' WHEN 2 THEN 'approved' ELSE 'closed' END,
         'owner' || i || '@example.com', '{}', 'default', 1, '[]', 1, 'seed',
         datetime('now', '-120 days'), datetime('now', '-120 days') FROM n;
