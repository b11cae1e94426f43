-- Counters for the ids the store hands out (issue 37): a number taken by one statement,
-- `INSERT .. ON CONFLICT DO UPDATE SET value = value + 1 RETURNING value`, which holds the
-- counter's row until the write commits, rather than `COUNT(*) + 1` or `MAX(id) + 1` read
-- before the insert (two writers on PostgreSQL would read the same number). And an explicit
-- order for the two tables that were paged by SQLite's `rowid`.

CREATE TABLE tollgate_counters (
    name TEXT PRIMARY KEY,            -- `jobs`, `regression_suites`, `replay_results`,
                                      -- `replay_results/SCENARIO`, `replay_batches/RUN`
    value BIGINT NOT NULL             -- the last number handed out
);

INSERT INTO tollgate_counters (name, value) SELECT 'jobs', COALESCE(MAX(id), 0) FROM jobs;

ALTER TABLE regression_suites ADD COLUMN seq BIGINT;
UPDATE regression_suites SET seq = rowid;
CREATE UNIQUE INDEX regression_suites_by_seq ON regression_suites (seq);
INSERT INTO tollgate_counters (name, value)
SELECT 'regression_suites', COUNT(*) FROM regression_suites;

ALTER TABLE replay_results ADD COLUMN seq BIGINT;
UPDATE replay_results SET seq = rowid;
CREATE UNIQUE INDEX replay_results_by_seq ON replay_results (seq);
INSERT INTO tollgate_counters (name, value)
SELECT 'replay_results', COALESCE(MAX(seq), 0) FROM replay_results;
INSERT INTO tollgate_counters (name, value)
SELECT 'replay_results/' || scenario_id, COUNT(*) FROM replay_results GROUP BY scenario_id;
INSERT INTO tollgate_counters (name, value)
SELECT 'replay_batches/' || run_id, COUNT(*) FROM replay_batches GROUP BY run_id;
