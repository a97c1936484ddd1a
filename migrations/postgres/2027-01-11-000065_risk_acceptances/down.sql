ALTER TABLE corrective_actions DROP COLUMN risk_accepted_until;
DROP TABLE risk_acceptances;
