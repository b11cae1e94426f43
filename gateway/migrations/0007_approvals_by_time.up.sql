-- The dashboard lists approvals in every state newest first, a page at a time by key
-- (`approvals_by_state` serves the lists of one state).
CREATE INDEX approvals_by_time ON approvals (requested_at, id);
