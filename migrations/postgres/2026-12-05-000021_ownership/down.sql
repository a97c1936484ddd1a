DROP TABLE team_owners;
DROP TABLE service_owners;
