DROP TABLE job_attempts;
DROP INDEX jobs_by_dedupe_key;
DROP INDEX jobs_ready;
DROP TABLE jobs;
