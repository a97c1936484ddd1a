DROP TABLE coe_reads;
