-- Back to the tsvector and its GIN index (migration 0022's memory search).

CREATE TABLE memories_fts (
    fts_rowid BIGINT PRIMARY KEY,
    terms TSVECTOR NOT NULL
);
CREATE INDEX memories_fts_terms ON memories_fts USING GIN (terms);

CREATE FUNCTION tollgate_memory_terms(scope TEXT, norm TEXT) RETURNS TSVECTOR
LANGUAGE SQL IMMUTABLE AS $$
    SELECT COALESCE(array_to_tsvector(array_agg(DISTINCT
               's' || encode(convert_to(scope, 'UTF8'), 'hex') || 'w' || w)), ''::tsvector)
    FROM unnest(string_to_array(norm, ' ')) AS w
    WHERE w <> '' AND octet_length(w) <= 512
$$;

INSERT INTO memories_fts (fts_rowid, terms)
    SELECT fts_rowid, tollgate_memory_terms(scope, norm) FROM memories;

CREATE OR REPLACE FUNCTION tollgate_memories_indexed() RETURNS TRIGGER
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO memories_fts (fts_rowid, terms)
        VALUES (NEW.fts_rowid, tollgate_memory_terms(NEW.scope, NEW.norm));
    UPDATE memory_groups SET members = members + 1 WHERE id = NEW.group_id;
    UPDATE memory_census SET members = members + 1;
    INSERT INTO memory_changes (fts_rowid) VALUES (NEW.fts_rowid);
    INSERT INTO memory_words (word, documents)
        SELECT DISTINCT w, 1 FROM unnest(string_to_array(NEW.norm, ' ')) AS w WHERE w <> '' AND octet_length(w) <= 512
        ON CONFLICT (word) DO UPDATE SET documents = memory_words.documents + 1;
    RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION tollgate_memories_reworded() RETURNS TRIGGER
LANGUAGE plpgsql AS $$
BEGIN
    UPDATE memory_words SET documents = documents - 1
    WHERE word IN (SELECT w FROM unnest(string_to_array(OLD.norm, ' ')) AS w);
    INSERT INTO memory_words (word, documents)
        SELECT DISTINCT w, 1 FROM unnest(string_to_array(NEW.norm, ' ')) AS w WHERE w <> '' AND octet_length(w) <= 512
        ON CONFLICT (word) DO UPDATE SET documents = memory_words.documents + 1;
    UPDATE memories_fts SET terms = tollgate_memory_terms(NEW.scope, NEW.norm)
    WHERE fts_rowid = OLD.fts_rowid;
    RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION tollgate_memories_unindexed() RETURNS TRIGGER
LANGUAGE plpgsql AS $$
BEGIN
    UPDATE memory_groups SET members = members - 1 WHERE id = OLD.group_id;
    UPDATE memory_census SET members = members - 1;
    UPDATE memory_words SET documents = documents - 1
    WHERE word IN (SELECT w FROM unnest(string_to_array(OLD.norm, ' ')) AS w);
    DELETE FROM memories_fts WHERE fts_rowid = OLD.fts_rowid;
    INSERT INTO memory_changes (fts_rowid) VALUES (OLD.fts_rowid);
    RETURN NULL;
END
$$;

DROP TABLE memory_postings;
