-- Only the order of the postings' rows changed (the table remembers its clustering index,
-- which nothing relies on): nothing to undo.
ALTER TABLE memory_postings SET WITHOUT CLUSTER;
