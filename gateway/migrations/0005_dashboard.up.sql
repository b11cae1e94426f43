-- The dashboard lists runs newest first, filtered by agent or status, a page at a time by key
-- (never OFFSET over everything).
CREATE INDEX runs_by_start ON runs (started_at, id);
CREATE INDEX runs_by_agent ON runs (agent, started_at, id);
CREATE INDEX runs_by_status ON runs (status, started_at, id);
