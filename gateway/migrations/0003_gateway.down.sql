DROP INDEX tool_usage_window;
DROP TABLE tool_usage;
DROP INDEX approvals_by_state;
DROP INDEX approvals_by_run;
DROP TABLE approvals;
