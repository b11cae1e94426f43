-- Back to `0009`'s index: every word of a memory indexed alone, its scope as one more token;
-- no change log.

DROP TRIGGER memories_unindexed;
DROP TRIGGER memories_reworded;
DROP TRIGGER memories_indexed;
DROP TRIGGER memories_reranked;
DROP TABLE memory_changes;
DROP TABLE memories_fts;

CREATE VIRTUAL TABLE memories_fts USING fts5 (
    norm, scope_token, tokenize = 'unicode61 remove_diacritics 0'
);
INSERT INTO memories_fts (rowid, norm, scope_token)
    SELECT fts_rowid, norm, 's' || lower(hex(scope)) FROM memories;

CREATE TRIGGER memories_indexed AFTER INSERT ON memories
BEGIN
    INSERT OR IGNORE INTO memory_groups (class, scope, sensitivity, status, pinned, expiring)
        VALUES (NEW.class, NEW.scope, NEW.sensitivity, NEW.status, NEW.pinned, NEW.expires_at <> 0);
    INSERT INTO memories_fts (norm, scope_token) VALUES (NEW.norm, 's' || lower(hex(NEW.scope)));
    UPDATE memories SET
        fts_rowid = last_insert_rowid(),
        group_id = (SELECT g.id FROM memory_groups g
                    WHERE g.class = NEW.class AND g.scope = NEW.scope
                      AND g.sensitivity = NEW.sensitivity AND g.status = NEW.status
                      AND g.pinned = NEW.pinned AND g.expiring = (NEW.expires_at <> 0))
    WHERE rowid = NEW.rowid;
    UPDATE memory_groups SET members = members + 1
    WHERE id = (SELECT group_id FROM memories WHERE rowid = NEW.rowid);
    UPDATE memory_census SET members = members + 1;
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
    INSERT INTO memories_fts (rowid, norm, scope_token)
        VALUES (OLD.fts_rowid, NEW.norm, 's' || lower(hex(NEW.scope)));
END;

CREATE TRIGGER memories_unindexed AFTER DELETE ON memories
BEGIN
    UPDATE memory_groups SET members = members - 1 WHERE id = OLD.group_id;
    UPDATE memory_census SET members = members - 1;
    UPDATE memory_words SET documents = documents - 1
    WHERE word IN (SELECT value FROM json_each('["' || replace(OLD.norm, ' ', '","') || '"]'));
    DELETE FROM memories_fts WHERE rowid = OLD.fts_rowid;
END;
