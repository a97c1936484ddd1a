DROP INDEX section_comments_by_coe;
DROP TABLE section_comments;
