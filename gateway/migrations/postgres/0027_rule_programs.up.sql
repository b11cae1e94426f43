-- The built-in programs receipts were decided under, by hash (see the SQLite migration).

CREATE TABLE rule_programs (
    hash TEXT COLLATE "C" NOT NULL PRIMARY KEY,
    files TEXT NOT NULL,
    created_at TEXT COLLATE "C" NOT NULL
);
