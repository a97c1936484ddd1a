-- What a COE page shows again after a form that did not go through, or a preview:
-- the page's forms POST, are answered 303, and the GET that follows reads this (so
-- Back and reload never resubmit). Kept per person, for a day.
CREATE TABLE kept_forms (
    id         TEXT PRIMARY KEY NOT NULL,
    person     TEXT NOT NULL,
    coe_id     TEXT NOT NULL,
    status     INTEGER NOT NULL,
    body       TEXT NOT NULL,
    created_at TIMESTAMP NOT NULL
);
CREATE INDEX kept_forms_by_age ON kept_forms (created_at);

-- The one-time keys of the pages' create forms: the first POST with a key creates the
-- record and notes where it landed; a repeat (a retry, a double click) with the same
-- fields (their fingerprint) lands there too.
CREATE TABLE form_keys (
    key        TEXT PRIMARY KEY NOT NULL,
    person     TEXT NOT NULL,
    landed     TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    created_at TIMESTAMP NOT NULL
);
CREATE INDEX form_keys_by_age ON form_keys (created_at);
