-- Auto-regression (issue 15): regression cases by version (the case file's YAML; its fixture
-- bundle is an artifact under the hash the case pins), each execution of a case (a case's
-- history), and suite executions grouping them.

CREATE TABLE regression_cases (
    id TEXT NOT NULL,
    version INTEGER NOT NULL,
    name TEXT NOT NULL,
    agent TEXT NOT NULL,
    task_type TEXT NOT NULL,
    run_id TEXT NOT NULL,             -- the run it was cut from (not a reference: cases outlive runs)
    bundle_hash TEXT NOT NULL REFERENCES artifacts(hash),
    reason TEXT NOT NULL,             -- why this version was made
    yaml TEXT NOT NULL,               -- the case file
    created_at TEXT NOT NULL,
    PRIMARY KEY (id, version)
);

CREATE TABLE regression_suites (
    id TEXT PRIMARY KEY,              -- sui- and a sequence
    selection TEXT NOT NULL,          -- JSON of what was asked to run
    job_id INTEGER,
    figures TEXT,                     -- JSON, once finished
    signatures TEXT,                  -- JSON, once finished
    created_at TEXT NOT NULL,
    finished_at TEXT
);

CREATE TABLE regression_runs (
    id INTEGER PRIMARY KEY,           -- rowid: increasing (rows are never deleted)
    case_id TEXT NOT NULL,
    version INTEGER NOT NULL,
    suite_id TEXT REFERENCES regression_suites(id),
    status TEXT NOT NULL,             -- passed, failed, flaky, error
    passes INTEGER NOT NULL,
    runs INTEGER NOT NULL,
    drift INTEGER NOT NULL,
    signature TEXT,
    report TEXT NOT NULL,             -- JSON of the case's report
    executed_at TEXT NOT NULL
);
CREATE INDEX regression_runs_by_case ON regression_runs (case_id, id);
CREATE INDEX regression_runs_by_suite ON regression_runs (suite_id);
