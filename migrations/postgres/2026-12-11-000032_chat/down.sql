DROP TABLE chat_channels;
DROP TABLE chat_messages;
