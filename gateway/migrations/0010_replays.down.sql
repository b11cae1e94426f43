DROP INDEX replay_results_by_run;
DROP INDEX replay_results_by_batch;
DROP INDEX replay_results_by_scenario;
DROP TABLE replay_results;
DROP TABLE replay_batches;
DROP INDEX replay_scenarios_by_run;
DROP TABLE replay_scenarios;
