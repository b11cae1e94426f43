-- A run stays on the envelope versions it opened with (its header names them, issue 32): a
-- version stored later reaches a running run only when an admin re-pins it. Each re-pin is a
-- row, kept as a record of who moved the run and when; the latest row of a run governs it.

CREATE TABLE run_pins (
    run_id TEXT NOT NULL REFERENCES runs (id),
    seq INTEGER NOT NULL,
    envelopes TEXT NOT NULL,
    pinned_by TEXT NOT NULL,
    pinned_at TEXT NOT NULL,
    PRIMARY KEY (run_id, seq)
);
