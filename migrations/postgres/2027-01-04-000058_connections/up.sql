-- The chat channels and trackers admins keep in coe (Admin → Chat, Admin → Trackers),
-- beside those the settings file declares. `settings` is the connection as the file
-- would write it (JSON), every secret in it sealed with the secret key
-- ({"$sealed": "v1:<key id>:…"}): the database never holds a token in clear.
-- `version` counts the saves of this row; `connections_revision` in database_marks is new
-- at every save of any row, so that the other replicas see a change within seconds.
CREATE TABLE connections (
    kind        TEXT NOT NULL,
    name        TEXT NOT NULL,
    settings    TEXT NOT NULL,
    version     BIGINT NOT NULL,
    updated_by  TEXT NOT NULL,
    updated_at  TIMESTAMP NOT NULL,
    PRIMARY KEY (kind, name)
);
-- A name is one connection's of its kind, whatever its case (as the settings file's).
CREATE UNIQUE INDEX connections_name_any_case ON connections (kind, lower(name));
INSERT INTO database_marks (name, value) VALUES ('connections_revision', '0');
