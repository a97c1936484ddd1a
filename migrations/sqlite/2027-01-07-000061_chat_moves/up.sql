-- Work from chat. A request from a chat platform is taken once: by its signature
-- (a replay is refused) and by the move it asks for (a retried delivery does nothing
-- twice); old keys are dropped as new ones come. A chat channel where a failure was
-- reported is linked to its COE (a follow-up added there goes to that COE). A
-- change made from chat says so in the history (`via`: slack, teams, matrix).
CREATE TABLE chat_requests (
    key          TEXT PRIMARY KEY NOT NULL,
    platform     TEXT NOT NULL,
    received_at  TIMESTAMP NOT NULL
);
CREATE INDEX chat_requests_by_time ON chat_requests (received_at);

CREATE TABLE chat_links (
    platform    TEXT NOT NULL,
    channel_id  TEXT NOT NULL,
    coe_id      TEXT NOT NULL REFERENCES coes (id) ON DELETE CASCADE,
    linked_by   TEXT NOT NULL,
    linked_at   TIMESTAMP NOT NULL,
    PRIMARY KEY (platform, channel_id)
);
CREATE INDEX chat_links_by_coe ON chat_links (coe_id);

ALTER TABLE audit_log ADD COLUMN via TEXT;
