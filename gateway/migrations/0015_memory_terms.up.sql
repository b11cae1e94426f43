-- Memory search indexes each word of a memory together with its scope: the term
-- `s<hex of the scope>w<word>`. A run sees the memories of a few scopes (its scope chain), so
-- a search looks up exactly the terms `scope × word` it can use, and each posting it walks is
-- a memory of a visible scope that says a query word. The index of `0009` paired every word
-- with every memory saying it anywhere and intersected that with the scopes' tokens, so a
-- search from a large organisation merged postings of the whole store (BENCHMARKS.md, memory
-- search). The table is contentless (the text is `memories.norm`), keeps no positions
-- (`detail=none`: nothing asks for phrases or ranks by FTS5) and splits only at ASCII
-- punctuation and spaces (`ascii`), so a term is always one token. `memory_words` still
-- counts each word's memories for BM25.
--
-- `memory_changes` logs which memories changed (by their index rowid) in what ranking reads of
-- them: group, expiry, words, class, strength, use, feedback and score. A process ranking memories
-- keeps those columns in memory (`memory::columns`) and reads only what the log says changed
-- since it last looked; a B-tree probe per match, about a microsecond, was what a search
-- from a large organisation spent its time on. The log keeps the last 100,000 changes: a
-- reader further behind loads every memory again. Its numbers never go back (the newest
-- change is never trimmed, and a new one is numbered after it), so a number seen once always
-- means the same change.
--
-- SQLite-specific, as `0009`: a PostgreSQL port would keep the same terms in a `tsvector`.

DROP TRIGGER memories_indexed;
DROP TRIGGER memories_reworded;
DROP TRIGGER memories_unindexed;
DROP TABLE memories_fts;

CREATE VIRTUAL TABLE memories_fts USING fts5 (
    terms, content = '', contentless_delete = 1, detail = none,
    tokenize = 'ascii'
);
INSERT INTO memories_fts (rowid, terms)
    SELECT m.fts_rowid,
           (SELECT group_concat(t, ' ') FROM (
               SELECT DISTINCT 's' || lower(hex(m.scope)) || 'w' || w.value AS t
               FROM json_each('["' || replace(m.norm, ' ', '","') || '"]') w
               WHERE w.value <> ''))
    FROM memories m;

CREATE TABLE memory_changes (
    seq INTEGER PRIMARY KEY,
    fts_rowid INTEGER NOT NULL
);

CREATE TRIGGER memories_reranked
AFTER UPDATE OF group_id, expires_at, norm, class, strength, usage_count, helpful, unhelpful,
    score, fts_rowid ON memories
BEGIN
    INSERT INTO memory_changes (fts_rowid) VALUES (NEW.fts_rowid);
    DELETE FROM memory_changes
    WHERE seq <= (SELECT MAX(seq) FROM memory_changes) - 100000;
END;

CREATE TRIGGER memories_indexed AFTER INSERT ON memories
BEGIN
    INSERT OR IGNORE INTO memory_groups (class, scope, sensitivity, status, pinned, expiring)
        VALUES (NEW.class, NEW.scope, NEW.sensitivity, NEW.status, NEW.pinned, NEW.expires_at <> 0);
    UPDATE memories SET
        fts_rowid = (SELECT COALESCE(MAX(fts_rowid), 0) + 1 FROM memories),
        group_id = (SELECT g.id FROM memory_groups g
                    WHERE g.class = NEW.class AND g.scope = NEW.scope
                      AND g.sensitivity = NEW.sensitivity AND g.status = NEW.status
                      AND g.pinned = NEW.pinned AND g.expiring = (NEW.expires_at <> 0))
    WHERE rowid = NEW.rowid;
    INSERT INTO memories_fts (rowid, terms)
        SELECT m.fts_rowid,
               (SELECT group_concat(t, ' ') FROM (
                   SELECT DISTINCT 's' || lower(hex(NEW.scope)) || 'w' || w.value AS t
                   FROM json_each('["' || replace(NEW.norm, ' ', '","') || '"]') w
                   WHERE w.value <> ''))
        FROM memories m WHERE m.rowid = NEW.rowid;
    UPDATE memory_groups SET members = members + 1
    WHERE id = (SELECT group_id FROM memories WHERE rowid = NEW.rowid);
    UPDATE memory_census SET members = members + 1;
    INSERT INTO memory_changes (fts_rowid)
        SELECT fts_rowid FROM memories WHERE rowid = NEW.rowid;
    INSERT INTO memory_words (word, documents)
        SELECT DISTINCT value, 1 FROM json_each('["' || replace(NEW.norm, ' ', '","') || '"]')
        WHERE value <> ''
        ON CONFLICT (word) DO UPDATE SET documents = documents + 1;
END;

CREATE TRIGGER memories_reworded AFTER UPDATE OF norm, scope ON memories
WHEN OLD.norm <> NEW.norm OR OLD.scope <> NEW.scope
BEGIN
    UPDATE memory_words SET documents = documents - 1
    WHERE word IN (SELECT value FROM json_each('["' || replace(OLD.norm, ' ', '","') || '"]'));
    INSERT INTO memory_words (word, documents)
        SELECT DISTINCT value, 1 FROM json_each('["' || replace(NEW.norm, ' ', '","') || '"]')
        WHERE value <> ''
        ON CONFLICT (word) DO UPDATE SET documents = documents + 1;
    DELETE FROM memories_fts WHERE rowid = OLD.fts_rowid;
    INSERT INTO memories_fts (rowid, terms)
        SELECT OLD.fts_rowid, group_concat(t, ' ') FROM (
            SELECT DISTINCT 's' || lower(hex(NEW.scope)) || 'w' || w.value AS t
            FROM json_each('["' || replace(NEW.norm, ' ', '","') || '"]') w
            WHERE w.value <> '');
END;

CREATE TRIGGER memories_unindexed AFTER DELETE ON memories
BEGIN
    UPDATE memory_groups SET members = members - 1 WHERE id = OLD.group_id;
    UPDATE memory_census SET members = members - 1;
    UPDATE memory_words SET documents = documents - 1
    WHERE word IN (SELECT value FROM json_each('["' || replace(OLD.norm, ' ', '","') || '"]'));
    DELETE FROM memories_fts WHERE rowid = OLD.fts_rowid;
    INSERT INTO memory_changes (fts_rowid) VALUES (OLD.fts_rowid);
END;
