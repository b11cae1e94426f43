DROP INDEX runs_by_status;
DROP INDEX runs_by_agent;
DROP INDEX runs_by_start;
