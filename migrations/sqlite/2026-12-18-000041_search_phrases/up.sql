-- Search that people can trust: phrases, nearness, actions, did-you-mean.
--
-- Corrective actions' words (title, description, success criteria, the note they were
-- closed with) join their COE's entry in the index, as `reindex` now writes it.
UPDATE coe_search
SET body = body || char(10) || (
    SELECT group_concat(
        title || ' ' || coalesce(description, '') || ' ' || coalesce(success_criteria, '')
            || ' ' || coalesce(resolution_note, '') || ' ' || coalesce(wont_do_reason, ''),
        char(10))
    FROM corrective_actions a
    WHERE a.coe_id = coe_search.coe_id)
WHERE coe_id IN (SELECT coe_id FROM corrective_actions);

-- The same text, its words as written (no stems): what a quoted phrase and the words
-- typed side by side are matched against. Its rows have the rowids of `coe_search`'s.
CREATE VIRTUAL TABLE coe_search_exact USING fts5 (coe_id UNINDEXED, text, tokenize = 'unicode61');
INSERT INTO coe_search_exact (rowid, coe_id, text)
    SELECT rowid, coe_id, title || char(10) || body FROM coe_search;

-- Each COE's row in both (an FTS5 table finds a row by its text or its rowid, not by an
-- unindexed column: replacing a COE's row looked through the whole index to find it).
CREATE TABLE coe_search_rows (
    coe_id     TEXT PRIMARY KEY NOT NULL,
    search_row INTEGER NOT NULL
) WITHOUT ROWID;
INSERT INTO coe_search_rows (coe_id, search_row) SELECT coe_id, rowid FROM coe_search;

-- The index's own words (letters only, 3 to 32 of them), for "did you mean".
CREATE TABLE search_words (word TEXT PRIMARY KEY NOT NULL) WITHOUT ROWID;
CREATE VIRTUAL TABLE temp.coe_search_vocab USING fts5vocab(main, coe_search_exact, 'row');
INSERT OR IGNORE INTO search_words (word)
    SELECT term FROM temp.coe_search_vocab
    WHERE length(term) BETWEEN 3 AND 32 AND term NOT GLOB '*[0-9]*';
DROP TABLE temp.coe_search_vocab;
