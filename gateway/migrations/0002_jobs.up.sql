-- The background job runner: jobs and the history of their attempts (one row per lease).
-- Portable SQL, so it also runs on PostgreSQL. Times are milliseconds since the Unix epoch,
-- as BIGINT: compared numerically, and too large for PostgreSQL's 32-bit INTEGER (SQLite
-- gives BIGINT the same integer affinity as INTEGER). Ids are assigned by the application
-- (the next after the largest) inside the enqueueing transaction, not by an autoincrement.

CREATE TABLE jobs (
    id BIGINT PRIMARY KEY,
    kind TEXT NOT NULL,
    payload TEXT NOT NULL,
    state TEXT NOT NULL,
    attempts INTEGER NOT NULL,
    max_attempts INTEGER NOT NULL,
    run_after BIGINT NOT NULL,
    dedupe_key TEXT,
    leased_by TEXT,
    leased_until BIGINT,
    lease_ms BIGINT,
    progress_done BIGINT,
    progress_total BIGINT,
    progress_message TEXT,
    progress_at BIGINT,
    result TEXT,
    last_error TEXT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    finished_at BIGINT
);
CREATE INDEX jobs_ready ON jobs (state, run_after);
CREATE INDEX jobs_by_dedupe_key ON jobs (kind, dedupe_key);

CREATE TABLE job_attempts (
    job_id BIGINT NOT NULL REFERENCES jobs (id),
    attempt INTEGER NOT NULL,
    worker TEXT NOT NULL,
    leased_at BIGINT NOT NULL,
    ended_at BIGINT,
    outcome TEXT NOT NULL,
    error TEXT,
    PRIMARY KEY (job_id, attempt)
);
