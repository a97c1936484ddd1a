DROP TABLE tracker_states; DROP TABLE tracker_deliveries; DROP TABLE tracker_jobs; DROP TABLE tickets;
