DROP INDEX replay_results_by_seq;
ALTER TABLE replay_results DROP COLUMN seq;
DROP INDEX regression_suites_by_seq;
ALTER TABLE regression_suites DROP COLUMN seq;
DROP TABLE tollgate_counters;
