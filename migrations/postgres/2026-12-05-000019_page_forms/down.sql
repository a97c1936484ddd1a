DROP TABLE form_keys;
DROP TABLE kept_forms;
