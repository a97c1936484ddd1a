-- When each person last looked at a COE's page, and at which version: the reviewer's
-- page shows what changed since their last look.
CREATE TABLE coe_reads (
    coe_id       TEXT NOT NULL,
    person_email TEXT NOT NULL,
    version      INTEGER NOT NULL,
    read_at      TIMESTAMP NOT NULL,
    PRIMARY KEY (coe_id, person_email)
);
