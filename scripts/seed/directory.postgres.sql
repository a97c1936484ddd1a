-- Seeding for scripts/measure-pages and scripts/bench (bulk SQL, not the API).
-- 10,000 people in 100 teams and 10,000 COEs in every state.
INSERT INTO people (email, name, team, created_at, updated_at)
  SELECT 'owner' || i || '@example.com', 'Owner ' || i, 'team-' || (i % 100), now(), now()
  FROM generate_series(0, 9999) i;
INSERT INTO coes (id, title, service, severity, state, owner_email, template, template_name,
                  template_version, links, version, created_by, created_at, updated_at)
  SELECT 'coe-' || i, 'Seeded COE ' || i, 'service-' || (i % 50), 1 + i % 5,
         (ARRAY['draft','in_review','approved','closed'])[1 + i % 4], 'owner' || i || '@example.com',
         '{}', 'default', 1, '[]', 1, 'seed', now() - interval '120 days', now() - interval '120 days'
  FROM generate_series(0, 9999) i;
