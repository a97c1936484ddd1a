-- The rules admins keep in coe (Admin → Templates) that pick the template a new COE
-- is opened with, after those of the settings file (`[[coe.templates]]`). The whole
-- ordered list is saved at once: each save is a new version (the history), and the
-- highest version is the one in use. `rules` is a JSON list of
-- {"template": name, "severities": [...], "services": [...], "teams": [...],
--  "labels": {key: value}}.
CREATE TABLE template_rules (
    version   BIGINT PRIMARY KEY,
    rules     TEXT NOT NULL,
    saved_by  TEXT NOT NULL,
    saved_at  TIMESTAMP NOT NULL
);
