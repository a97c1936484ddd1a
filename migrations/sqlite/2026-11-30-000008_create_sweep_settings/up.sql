-- The settings the last server sweep ran with (public_url, org.timezone), so that a
-- `coe sweep` run with other settings can say so.
CREATE TABLE sweep_settings (
    name TEXT PRIMARY KEY NOT NULL,
    value TEXT NOT NULL,
    updated_at TIMESTAMP NOT NULL
);
