DELETE FROM database_marks WHERE name = 'connections_revision';
DROP INDEX connections_name_any_case;
DROP TABLE connections;
