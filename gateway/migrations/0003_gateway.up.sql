-- The gateway's runtime state: approvals of gated tool calls, and the calls counted against
-- rate-limited tool rules. Both are projections kept beside the runs' hash-chained events
-- (the `decision` and `approval` events are the record; these tables make the lookups cheap
-- and survive a restart). Portable SQL; times are milliseconds since the Unix epoch (BIGINT).

CREATE TABLE approvals (
    id TEXT PRIMARY KEY,
    run_id TEXT NOT NULL REFERENCES runs (id),
    call_id TEXT NOT NULL,
    tool TEXT NOT NULL,
    arguments TEXT NOT NULL,
    -- blake3 of the canonical JSON of {run, tool, arguments}: the exact call approved.
    call_hash TEXT NOT NULL,
    -- `ID@VERSION` of the governing envelopes when it was requested, comma-separated.
    envelopes TEXT NOT NULL,
    -- The rules that required it, comma-separated, and who may approve (empty: anyone).
    rules TEXT NOT NULL,
    approvers TEXT NOT NULL,
    -- pending | approved | rejected | used | expired
    state TEXT NOT NULL,
    requested_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    decided_by TEXT,
    reason TEXT,
    decided_at BIGINT,
    used_at BIGINT
);
CREATE INDEX approvals_by_run ON approvals (run_id, state);
CREATE INDEX approvals_by_state ON approvals (state, requested_at);

CREATE TABLE tool_usage (
    rule_id TEXT NOT NULL,
    -- run | agent | task, and the id it counts for.
    per_kind TEXT NOT NULL,
    per_id TEXT NOT NULL,
    run_id TEXT NOT NULL,
    call_id TEXT NOT NULL,
    at BIGINT NOT NULL,
    PRIMARY KEY (rule_id, per_kind, per_id, run_id, call_id)
);
CREATE INDEX tool_usage_window ON tool_usage (rule_id, per_kind, per_id, at);
