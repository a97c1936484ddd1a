-- Search that people can trust: phrases, nearness, actions, did-you-mean.
--
-- Corrective actions' words (title, description, success criteria, the note they were
-- closed with) join their COE's entry in the index, as `reindex` now writes it.
UPDATE coe_search s
SET body = s.body || E'\n' || a.words
FROM (
    SELECT coe_id,
           string_agg(concat_ws(' ', title, description, success_criteria, resolution_note,
                                wont_do_reason), E'\n') AS words
    FROM corrective_actions
    GROUP BY coe_id
) a
WHERE a.coe_id = s.coe_id;

-- The same text, its words as written (no stems, no stop words dropped): what a quoted
-- phrase and the words typed side by side are matched against ("timed out": the
-- English configuration drops "out").
ALTER TABLE coe_search ADD COLUMN exact tsvector
    GENERATED ALWAYS AS (to_tsvector('simple', title || ' ' || body)) STORED;
CREATE INDEX coe_search_exact ON coe_search USING GIN (exact);

-- The index's own words (letters only, 3 to 32 of them), for "did you mean".
CREATE TABLE search_words (word TEXT PRIMARY KEY NOT NULL);
INSERT INTO search_words (word)
    SELECT word FROM ts_stat('SELECT exact FROM coe_search')
    WHERE length(word) BETWEEN 3 AND 32 AND word ~ '^[[:alpha:]]+$'
    ON CONFLICT DO NOTHING;
