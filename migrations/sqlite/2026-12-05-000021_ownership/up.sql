-- The service map as admins keep it on the admin page (the settings file's
-- [ownership.services] still counts, under it): who owns the COEs of a service, the
-- team it belongs to, and who reviews them unless someone else is named.
CREATE TABLE service_owners (
    service        TEXT PRIMARY KEY NOT NULL,
    owner_email    TEXT,
    team           TEXT,
    reviewer_email TEXT,
    updated_by     TEXT NOT NULL,
    updated_at     TIMESTAMP NOT NULL
);

-- Each team's default COE owner: an alert's `team` label, or a service's team, names
-- the team.
CREATE TABLE team_owners (
    team        TEXT PRIMARY KEY NOT NULL,
    owner_email TEXT NOT NULL,
    updated_by  TEXT NOT NULL,
    updated_at  TIMESTAMP NOT NULL
);
