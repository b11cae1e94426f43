-- The built-in programs receipts were decided under, by hash: a receipt recorded without its
-- proof and why-not names the program (the packs' sources and the engine's proof format) they
-- are rendered under when read, and a later release renders it with that program, not its own.
-- `files` is the JSON array of `[path, text]` the program joins, in load order.

CREATE TABLE rule_programs (
    hash TEXT NOT NULL PRIMARY KEY,
    files TEXT NOT NULL,
    created_at TEXT NOT NULL
);
