DROP INDEX regression_runs_by_suite;
DROP INDEX regression_runs_by_case;
DROP TABLE regression_runs;
DROP TABLE regression_suites;
DROP TABLE regression_cases;
