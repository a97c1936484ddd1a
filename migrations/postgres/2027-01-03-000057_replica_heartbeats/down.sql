DROP TABLE replica_heartbeats;
