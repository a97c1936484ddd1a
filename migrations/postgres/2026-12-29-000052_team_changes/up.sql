-- A person's team changing (an admin, a CSV import, the identity provider's team
-- groups): the coverage audit counts what they did before the change under the team
-- they were in then. A first team (from none) is not a change: it counts from the start.
CREATE TABLE team_changes (
    id           TEXT PRIMARY KEY NOT NULL,
    person_email TEXT NOT NULL,
    old_team     TEXT NOT NULL,
    new_team     TEXT,
    changed_at   TIMESTAMP NOT NULL
);
CREATE INDEX team_changes_by_person ON team_changes (person_email, changed_at);
