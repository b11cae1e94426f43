-- Back to one row per (rule, counted id, run, call id): repeated call ids keep their first.

CREATE TABLE tool_usage_by_call (
    rule_id TEXT NOT NULL,
    per_kind TEXT NOT NULL,
    per_id TEXT NOT NULL,
    run_id TEXT NOT NULL,
    call_id TEXT NOT NULL,
    at BIGINT NOT NULL,
    PRIMARY KEY (rule_id, per_kind, per_id, run_id, call_id)
);
INSERT INTO tool_usage_by_call (rule_id, per_kind, per_id, run_id, call_id, at)
    SELECT rule_id, per_kind, per_id, run_id, call_id, MIN(at) FROM tool_usage
    GROUP BY rule_id, per_kind, per_id, run_id, call_id;
DROP TABLE tool_usage;
ALTER TABLE tool_usage_by_call RENAME TO tool_usage;
CREATE INDEX tool_usage_window ON tool_usage (rule_id, per_kind, per_id, at);
