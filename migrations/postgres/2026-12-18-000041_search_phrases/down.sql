DROP TABLE search_words;
DROP INDEX coe_search_exact;
ALTER TABLE coe_search DROP COLUMN exact;
