-- Memory search at scale. Eligibility depends only on a memory's metadata, and memories share
-- it in few combinations: `memory_groups` holds each combination once (class, scope,
-- sensitivity, status, pinned, and whether it has an expiry) with its member count, so policy
-- decides a few hundred groups instead of every memory, and the store then selects the
-- eligible groups' members by index. `memories_fts` indexes what memories say (their
-- normalised text) with a token for their scope, so a search finds the words among the
-- memories of the scopes a run can see without touching the rest; `memory_words` keeps each
-- word's document frequency for BM25 (FTS5's own vocabulary table counts by walking every
-- posting, far too slow for a common word in a million memories). FTS5 keeps its own rowids (a `TEXT PRIMARY KEY` table's
-- rowids may change under VACUUM), which `memories.fts_rowid` links to. Triggers keep all of
-- it in step with `memories` whatever writes it.
--
-- SQLite-specific (FTS5, trigger bodies): a PostgreSQL port would use a tsvector column and
-- a trigger function for the same two jobs.

CREATE TABLE memory_groups (
    id INTEGER PRIMARY KEY,
    class TEXT NOT NULL,
    scope TEXT NOT NULL,
    sensitivity TEXT NOT NULL,
    status TEXT NOT NULL,
    pinned INTEGER NOT NULL,
    expiring INTEGER NOT NULL,
    members INTEGER NOT NULL DEFAULT 0,
    UNIQUE (class, scope, sensitivity, status, pinned, expiring)
);

CREATE INDEX memory_groups_by_scope ON memory_groups (scope);

-- How many memories there are, kept by the triggers (counting a million rows is slow).
CREATE TABLE memory_census (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    members INTEGER NOT NULL
);
INSERT INTO memory_census (id, members) SELECT 1, COUNT(*) FROM memories;

ALTER TABLE memories ADD COLUMN group_id INTEGER;
ALTER TABLE memories ADD COLUMN fts_rowid INTEGER;

CREATE VIRTUAL TABLE memories_fts USING fts5 (
    norm, scope_token, tokenize = 'unicode61 remove_diacritics 0'
);
CREATE TABLE memory_words (
    word TEXT PRIMARY KEY,
    documents INTEGER NOT NULL
);

-- Groups numbered in the order their first member was stored, as the triggers number them.
INSERT INTO memory_groups (class, scope, sensitivity, status, pinned, expiring)
    SELECT class, scope, sensitivity, status, pinned, expires_at <> 0 FROM memories
    GROUP BY class, scope, sensitivity, status, pinned, expires_at <> 0
    ORDER BY MIN(rowid);
UPDATE memories SET group_id = (
    SELECT g.id FROM memory_groups g
    WHERE g.class = memories.class AND g.scope = memories.scope
      AND g.sensitivity = memories.sensitivity AND g.status = memories.status
      AND g.pinned = memories.pinned AND g.expiring = (memories.expires_at <> 0));
UPDATE memory_groups SET members = (SELECT COUNT(*) FROM memories m WHERE m.group_id = memory_groups.id);
INSERT INTO memories_fts (rowid, norm, scope_token)
    SELECT rowid, norm, 's' || lower(hex(scope)) FROM memories;
UPDATE memories SET fts_rowid = rowid;
-- `norm` is words of letters and digits between single spaces, so it splits as a JSON array.
INSERT INTO memory_words (word, documents)
    SELECT w.value, COUNT(DISTINCT m.rowid)
    FROM memories m, json_each('["' || replace(m.norm, ' ', '","') || '"]') w
    WHERE w.value <> '' GROUP BY w.value;

-- The memory screen pages each status by id.
CREATE INDEX memories_by_status_id ON memories (status, id);

-- A person's edit of a memory's metadata (today its sensitivity): who, why, from what to what.
CREATE TABLE memory_edits (
    memory_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    field TEXT NOT NULL CHECK (field IN ('sensitivity')),
    old_value TEXT NOT NULL,
    new_value TEXT NOT NULL,
    edited_by TEXT NOT NULL,
    reason TEXT NOT NULL,
    at TEXT NOT NULL,
    PRIMARY KEY (memory_id, seq)
);

-- Feedback from those who used a memory: helpful, unhelpful, or wrong (which quarantines it).
-- The counts on the row rank it; the rows say who and why.
CREATE TABLE memory_feedback (
    memory_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    verdict TEXT NOT NULL CHECK (verdict IN ('helpful', 'unhelpful', 'wrong')),
    given_by TEXT NOT NULL,
    note TEXT NOT NULL,
    run_id TEXT,
    at TEXT NOT NULL,
    PRIMARY KEY (memory_id, seq)
);
ALTER TABLE memories ADD COLUMN helpful INTEGER NOT NULL DEFAULT 0;
ALTER TABLE memories ADD COLUMN unhelpful INTEGER NOT NULL DEFAULT 0;

CREATE INDEX memories_by_group ON memories (group_id, expires_at);
CREATE INDEX memories_by_group_rank ON memories (group_id, strength DESC, usage_count DESC, id);
CREATE UNIQUE INDEX memories_by_fts_rowid ON memories (fts_rowid);

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

CREATE TRIGGER memories_regrouped
AFTER UPDATE OF class, scope, sensitivity, status, pinned, expires_at ON memories
WHEN OLD.class <> NEW.class OR OLD.scope <> NEW.scope OR OLD.sensitivity <> NEW.sensitivity
  OR OLD.status <> NEW.status OR OLD.pinned <> NEW.pinned
  OR (OLD.expires_at <> 0) <> (NEW.expires_at <> 0)
BEGIN
    UPDATE memory_groups SET members = members - 1 WHERE id = OLD.group_id;
    INSERT OR IGNORE INTO memory_groups (class, scope, sensitivity, status, pinned, expiring)
        VALUES (NEW.class, NEW.scope, NEW.sensitivity, NEW.status, NEW.pinned, NEW.expires_at <> 0);
    UPDATE memories SET group_id = (
        SELECT g.id FROM memory_groups g
        WHERE g.class = NEW.class AND g.scope = NEW.scope
          AND g.sensitivity = NEW.sensitivity AND g.status = NEW.status
          AND g.pinned = NEW.pinned AND g.expiring = (NEW.expires_at <> 0))
    WHERE rowid = NEW.rowid;
    UPDATE memory_groups SET members = members + 1
    WHERE id = (SELECT group_id FROM memories WHERE rowid = NEW.rowid);
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
