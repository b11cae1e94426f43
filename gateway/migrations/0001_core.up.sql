-- The flight recorder: runs, steps, events (a hash chain per run), artifacts stored once by
-- content hash, envelope versions, and records promoted from runs.
-- Portable SQL: TEXT/INTEGER/BLOB types, no SQLite-only syntax, so it also runs on PostgreSQL.

CREATE TABLE runs (
    id TEXT PRIMARY KEY,
    agent TEXT NOT NULL,
    task TEXT NOT NULL,
    scope TEXT NOT NULL,
    clearance TEXT NOT NULL,
    status TEXT NOT NULL,
    started_at TEXT NOT NULL,
    finished_at TEXT,
    parent_run TEXT,
    envelopes TEXT NOT NULL,
    metadata TEXT NOT NULL,
    event_count INTEGER NOT NULL DEFAULT 0,
    head_hash TEXT NOT NULL DEFAULT '',
    recorded_at TEXT NOT NULL
);

CREATE TABLE steps (
    run_id TEXT NOT NULL REFERENCES runs (id),
    idx INTEGER NOT NULL,
    name TEXT NOT NULL,
    agent TEXT NOT NULL,
    PRIMARY KEY (run_id, idx)
);

CREATE TABLE events (
    run_id TEXT NOT NULL REFERENCES runs (id),
    seq INTEGER NOT NULL,
    step_idx INTEGER NOT NULL,
    kind TEXT NOT NULL,
    at TEXT NOT NULL,
    payload TEXT,
    payload_hash TEXT NOT NULL,
    prev_hash TEXT NOT NULL,
    hash TEXT NOT NULL,
    PRIMARY KEY (run_id, seq)
);
CREATE INDEX events_by_kind ON events (kind, run_id);

CREATE TABLE artifacts (
    hash TEXT PRIMARY KEY,
    media_type TEXT NOT NULL,
    size INTEGER NOT NULL,
    body BLOB NOT NULL,
    created_at TEXT NOT NULL
);

CREATE TABLE envelope_versions (
    id TEXT NOT NULL,
    version INTEGER NOT NULL,
    content_hash TEXT NOT NULL,
    artifact TEXT NOT NULL REFERENCES artifacts (hash),
    created_at TEXT NOT NULL,
    PRIMARY KEY (id, content_hash)
);

CREATE TABLE run_envelopes (
    run_id TEXT NOT NULL REFERENCES runs (id),
    envelope_id TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    PRIMARY KEY (run_id, envelope_id)
);

CREATE TABLE promoted_records (
    id TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    body TEXT NOT NULL,
    source_run TEXT NOT NULL REFERENCES runs (id),
    source_step INTEGER NOT NULL,
    source_event INTEGER NOT NULL,
    scope TEXT NOT NULL CHECK (scope <> ''),
    ttl_seconds INTEGER NOT NULL CHECK (ttl_seconds >= 0),
    sensitivity TEXT NOT NULL
        CHECK (sensitivity IN ('public', 'internal', 'confidential', 'secret')),
    created_at TEXT NOT NULL
);

CREATE TABLE provenance_edges (
    parent TEXT NOT NULL,
    child TEXT NOT NULL,
    relation TEXT NOT NULL,
    PRIMARY KEY (parent, child, relation)
);
CREATE INDEX provenance_by_child ON provenance_edges (child);
