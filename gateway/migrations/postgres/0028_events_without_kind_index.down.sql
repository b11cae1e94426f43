CREATE INDEX events_by_kind ON events (kind, run_id);
