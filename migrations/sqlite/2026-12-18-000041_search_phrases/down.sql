DROP TABLE search_words;
DROP TABLE coe_search_rows;
DROP TABLE coe_search_exact;
