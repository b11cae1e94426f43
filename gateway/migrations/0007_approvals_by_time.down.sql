DROP INDEX approvals_by_time;
