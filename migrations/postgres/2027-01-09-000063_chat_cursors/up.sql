-- Work from Matrix. coe reads the rooms its bot is in (`/sync`) from where it last
-- stopped: the homeserver's token for that point, kept per bot account, so that a
-- restart or another replica goes on from there and a command is heard once.
CREATE TABLE chat_cursors (
    platform    TEXT NOT NULL,
    account     TEXT NOT NULL,
    position    TEXT NOT NULL,
    updated_at  TIMESTAMP NOT NULL,
    PRIMARY KEY (platform, account)
);
