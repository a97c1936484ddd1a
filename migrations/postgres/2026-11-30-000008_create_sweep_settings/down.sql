DROP TABLE sweep_settings;
