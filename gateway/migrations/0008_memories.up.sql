-- The memory distiller: memories distilled from runs, where each came from, and every review
-- outcome. A memory's id is a hash of its class and normalised text, so the same thing said in
-- two runs is one memory with two sources. Times: RFC 3339 text (`*_at`), except `expires_at`,
-- seconds since the epoch (0: no fixed end), which eligibility compares numerically.

CREATE TABLE memories (
    id TEXT PRIMARY KEY,
    class TEXT NOT NULL
        CHECK (class IN ('fact', 'procedure', 'preference', 'warning', 'summary')),
    text TEXT NOT NULL,
    norm TEXT NOT NULL,
    scope TEXT NOT NULL CHECK (scope <> ''),
    sensitivity TEXT NOT NULL
        CHECK (sensitivity IN ('public', 'internal', 'confidential', 'secret')),
    status TEXT NOT NULL
        CHECK (status IN ('candidate', 'approved', 'rejected', 'quarantined', 'expired')),
    pinned INTEGER NOT NULL DEFAULT 0,
    ttl_seconds BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    strength INTEGER NOT NULL DEFAULT 1,
    usage_count BIGINT NOT NULL DEFAULT 0,
    -- The score by parts (canonical JSON), as last distilled.
    score TEXT NOT NULL,
    extractor TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE INDEX memories_by_status ON memories (status, class, scope);
CREATE INDEX memories_by_class_scope ON memories (class, scope);

CREATE TABLE memory_sources (
    memory_id TEXT NOT NULL REFERENCES memories (id),
    run_id TEXT NOT NULL REFERENCES runs (id),
    step INTEGER NOT NULL,
    event INTEGER NOT NULL,
    episode INTEGER NOT NULL,
    quote TEXT NOT NULL,
    PRIMARY KEY (memory_id, run_id, event)
);
CREATE INDEX memory_sources_by_run ON memory_sources (run_id);

CREATE TABLE memory_decisions (
    memory_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    decision TEXT NOT NULL
        CHECK (decision IN ('accept', 'reject', 'merge', 'expire', 'quarantine')),
    decided_by TEXT NOT NULL,
    reason TEXT NOT NULL,
    at TEXT NOT NULL,
    merged_into TEXT,
    PRIMARY KEY (memory_id, seq)
);

-- A memory a compile included: which compile (the run's `compile` event) and why it was
-- chosen (its rank and relevance). `GET /v2/memory/{id}/usage` lists them.
CREATE TABLE memory_links (
    memory_id TEXT NOT NULL REFERENCES memories (id),
    run_id TEXT NOT NULL REFERENCES runs (id),
    compile_seq INTEGER NOT NULL,
    reason TEXT NOT NULL,
    at TEXT NOT NULL,
    PRIMARY KEY (memory_id, run_id, compile_seq)
);
CREATE INDEX memory_links_by_run ON memory_links (run_id, compile_seq);
