DROP TABLE chat_cursors;
