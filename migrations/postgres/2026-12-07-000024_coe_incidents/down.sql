DROP INDEX coe_incidents_by_coe;
DROP TABLE coe_incidents;
