DROP INDEX coes_by_created;
