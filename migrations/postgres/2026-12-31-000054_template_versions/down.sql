DROP TABLE coe_templates;
