-- Each replica that delivers says it is alive every few seconds (`seen_at`), under its
-- `server.replica_name`: an email a replica was sending is stranded as soon as that
-- replica has been silent for a minute (it stopped, or came back under another name),
-- not only once its claim's lease runs out.
CREATE TABLE replica_heartbeats (
    name        TEXT PRIMARY KEY NOT NULL,
    started_at  TIMESTAMP NOT NULL,
    seen_at     TIMESTAMP NOT NULL
);
