-- Rate limits count decisions, not the caller's call ids (issue 32, hole 1): 20 calls sent
-- with `"call_id": "same"` were counted once under the old key. Each counted call is a row.

CREATE TABLE tool_usage_by_decision (
    seq INTEGER PRIMARY KEY,
    rule_id TEXT NOT NULL,
    per_kind TEXT NOT NULL,
    per_id TEXT NOT NULL,
    run_id TEXT NOT NULL,
    call_id TEXT NOT NULL,
    at BIGINT NOT NULL
);
INSERT INTO tool_usage_by_decision (rule_id, per_kind, per_id, run_id, call_id, at)
    SELECT rule_id, per_kind, per_id, run_id, call_id, at FROM tool_usage ORDER BY at;
DROP TABLE tool_usage;
ALTER TABLE tool_usage_by_decision RENAME TO tool_usage;
CREATE INDEX tool_usage_window ON tool_usage (rule_id, per_kind, per_id, at);
