-- `events_by_kind` served no read (see the SQLite migration): dropped, so an append writes
-- only the events' own key.
DROP INDEX events_by_kind;
