-- The postings table rewritten in key order (issue 37). Migration 0025 filled it from a
-- `SELECT DISTINCT`, which PostgreSQL may hash: the rows landed in no useful order, so an
-- index-only scan of one term checked the visibility map of a heap page far from the last
-- one's, changing visibility map pages at nearly every posting (10,500 buffer visits and 7 ms
-- for the 18,000 postings of a common word at a million memories; 100 visits and 2.5 ms once
-- in key order). Postings written since by the triggers come in row id order, which keeps a
-- term's scan on few visibility map pages; a table much churned by removals can be put back in
-- order the same way (`CLUSTER memory_postings`), as any PostgreSQL table. Takes the table's
-- exclusive lock while it runs (about a minute at a million memories); nothing else changes.

CLUSTER memory_postings USING memory_postings_pkey;
