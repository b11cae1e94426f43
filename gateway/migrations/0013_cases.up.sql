-- Cases (issue 17): the append-only event stream of every case, hash-chained, with the
-- projections rebuilt from it by replay (`cases::project`): the case header, worker
-- evidence, proposal actions, preview diffs, policy status, commit status and the timeline.
-- Only `case_events` is the record; every other table here can be dropped and rebuilt.

CREATE TABLE case_events (
    case_id TEXT NOT NULL,
    version INTEGER NOT NULL,         -- 1, 2, 3... without gaps: the case's version after it
    event_id TEXT NOT NULL,           -- the appender's id: appending it again stores nothing
    kind TEXT NOT NULL,
    payload TEXT NOT NULL,            -- canonical JSON
    actor TEXT NOT NULL,
    at TEXT NOT NULL,                 -- RFC 3339
    prev_hash TEXT NOT NULL,
    hash TEXT NOT NULL,               -- blake3 over prev_hash, version, event id, kind, payload, actor, at
    PRIMARY KEY (case_id, version),
    UNIQUE (case_id, event_id)        -- generated ids are `CASE/VERSION`; callers' ids have no `/`
);

CREATE TABLE cases (
    case_id TEXT PRIMARY KEY,
    pack_id TEXT NOT NULL,
    engine_id TEXT NOT NULL,
    engine_version TEXT NOT NULL,
    pack_root TEXT NOT NULL,
    title TEXT NOT NULL,
    state TEXT NOT NULL,              -- open, awaiting_approval, committed, failed...
    version INTEGER NOT NULL,
    head_hash TEXT NOT NULL,
    opened_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);

CREATE INDEX cases_by_update ON cases (updated_at, case_id);

CREATE TABLE case_evidence (
    case_id TEXT NOT NULL,
    worker TEXT NOT NULL,
    key TEXT NOT NULL,
    value TEXT NOT NULL,              -- JSON
    source TEXT NOT NULL,             -- adapter (the worker's adapter ran) or api (a caller posted it)
    version INTEGER NOT NULL,         -- the event that recorded it
    PRIMARY KEY (case_id, worker, key)
);

CREATE TABLE case_proposals (
    case_id TEXT NOT NULL,
    proposal_id TEXT NOT NULL,
    capability TEXT NOT NULL,
    action TEXT NOT NULL,
    wording TEXT NOT NULL,
    input TEXT NOT NULL,              -- JSON
    state TEXT NOT NULL,
    version INTEGER NOT NULL,
    PRIMARY KEY (case_id, proposal_id)
);

CREATE TABLE case_previews (
    case_id TEXT NOT NULL,
    proposal_id TEXT NOT NULL,
    preview_hash TEXT NOT NULL,
    diff TEXT NOT NULL,               -- JSON array of changes
    summary TEXT NOT NULL,
    version INTEGER NOT NULL,
    PRIMARY KEY (case_id, proposal_id)
);

CREATE TABLE case_policy (
    case_id TEXT NOT NULL,
    proposal_id TEXT NOT NULL,
    preview_hash TEXT NOT NULL,
    effect TEXT NOT NULL,             -- allow, deny
    rules TEXT NOT NULL,              -- JSON array
    approval_id TEXT,
    approval_state TEXT,              -- pending, approved, rejected
    version INTEGER NOT NULL,
    PRIMARY KEY (case_id, proposal_id)
);

CREATE TABLE case_commits (
    case_id TEXT NOT NULL,
    proposal_id TEXT NOT NULL,
    state TEXT NOT NULL,              -- started, committed, failed, refused
    mode TEXT NOT NULL,
    detail TEXT NOT NULL,             -- JSON: receipt, verification, compensation, or why refused
    version INTEGER NOT NULL,
    PRIMARY KEY (case_id, proposal_id)
);

CREATE TABLE case_timeline (
    case_id TEXT NOT NULL,
    version INTEGER NOT NULL,
    kind TEXT NOT NULL,
    summary TEXT NOT NULL,
    actor TEXT NOT NULL,
    at TEXT NOT NULL,
    PRIMARY KEY (case_id, version)
);
