-- Counterfactual replay (issue 14): scenarios (a recorded run plus mutations), batches of
-- them against one baseline, and their results (metrics, label, the side-by-side comparison).

CREATE TABLE replay_scenarios (
    id TEXT PRIMARY KEY,              -- scn- and a hash of the canonical spec
    run_id TEXT NOT NULL REFERENCES runs(id),
    step INTEGER,
    name TEXT,
    spec TEXT NOT NULL,               -- canonical JSON of the ScenarioSpec
    created_by TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE INDEX replay_scenarios_by_run ON replay_scenarios (run_id, created_at);

CREATE TABLE replay_batches (
    id TEXT PRIMARY KEY,              -- bat- and a sequence
    run_id TEXT NOT NULL REFERENCES runs(id),
    name TEXT,
    spec TEXT NOT NULL,               -- canonical JSON of the BatchSpec
    scenarios TEXT NOT NULL,          -- JSON array of scenario ids, in order
    job_id INTEGER,
    created_by TEXT NOT NULL,
    created_at TEXT NOT NULL
);

CREATE TABLE replay_results (
    id TEXT PRIMARY KEY,              -- rpl- and a sequence
    scenario_id TEXT NOT NULL REFERENCES replay_scenarios(id),
    batch_id TEXT REFERENCES replay_batches(id),
    run_id TEXT NOT NULL REFERENCES runs(id),
    label TEXT NOT NULL,              -- win, loss, neutral
    first_change INTEGER,
    result TEXT NOT NULL,             -- JSON of the ReplayResult
    executed_at TEXT NOT NULL
);
CREATE INDEX replay_results_by_scenario ON replay_results (scenario_id);
CREATE INDEX replay_results_by_batch ON replay_results (batch_id);
CREATE INDEX replay_results_by_run ON replay_results (run_id);
