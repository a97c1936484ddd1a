DROP TABLE template_rules;
