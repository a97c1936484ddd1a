-- Templates an admin keeps in coe (Admin → Templates), besides the settings file:
-- every save is a new version; a COE keeps the copy it was opened with (coes.template),
-- so a new version changes only the COEs opened after it. The highest version of a
-- name is the one new COEs get (a saved version is numbered above the file's).
CREATE TABLE coe_templates (
    name      TEXT NOT NULL,
    version   INTEGER NOT NULL,
    body      TEXT NOT NULL,
    saved_by  TEXT NOT NULL,
    saved_at  TIMESTAMP NOT NULL,
    PRIMARY KEY (name, version)
);
