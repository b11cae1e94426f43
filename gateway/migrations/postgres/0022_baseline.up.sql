-- The whole schema of version 22 on PostgreSQL: the version at which the engine arrived.
-- SQLite reached it through migrations 1 to 22 (`gateway/migrations/`); each table, column and
-- index here is the one SQLite has at 22, with PostgreSQL's types (BIGINT for SQLite's 64-bit
-- INTEGER, BYTEA for BLOB, identity columns for INTEGER PRIMARY KEY rowids). Later versions
-- are written for both engines under the same number. Every text column compares and sorts
-- by bytes (`COLLATE "C"`), as SQLite's do, whatever the database's own collation: otherwise
-- listings ordered by id (`R2` before `r0` on SQLite, after it under en-US) and key paging
-- answer differently on the two engines (found by the differential test, store/differential.rs).

CREATE TABLE runs (
    id TEXT COLLATE "C" PRIMARY KEY,
    agent TEXT COLLATE "C" NOT NULL,
    task TEXT COLLATE "C" NOT NULL,
    scope TEXT COLLATE "C" NOT NULL,
    clearance TEXT COLLATE "C" NOT NULL,
    status TEXT COLLATE "C" NOT NULL,
    started_at TEXT COLLATE "C" NOT NULL,
    finished_at TEXT COLLATE "C",
    parent_run TEXT COLLATE "C",
    envelopes TEXT COLLATE "C" NOT NULL,
    metadata TEXT COLLATE "C" NOT NULL,
    event_count BIGINT NOT NULL DEFAULT 0,
    head_hash TEXT COLLATE "C" NOT NULL DEFAULT '',
    recorded_at TEXT COLLATE "C" NOT NULL,
    decisions_allow BIGINT NOT NULL DEFAULT 0,
    decisions_redact BIGINT NOT NULL DEFAULT 0,
    decisions_require_approval BIGINT NOT NULL DEFAULT 0,
    decisions_rate_limited BIGINT NOT NULL DEFAULT 0,
    decisions_deny BIGINT NOT NULL DEFAULT 0,
    user_id TEXT COLLATE "C"
);
CREATE TABLE steps (
    run_id TEXT COLLATE "C" NOT NULL REFERENCES runs (id),
    idx BIGINT NOT NULL,
    name TEXT COLLATE "C" NOT NULL,
    agent TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (run_id, idx)
);
CREATE TABLE events (
    run_id TEXT COLLATE "C" NOT NULL REFERENCES runs (id),
    seq BIGINT NOT NULL,
    step_idx BIGINT NOT NULL,
    kind TEXT COLLATE "C" NOT NULL,
    at TEXT COLLATE "C" NOT NULL,
    payload TEXT COLLATE "C",
    payload_hash TEXT COLLATE "C" NOT NULL,
    prev_hash TEXT COLLATE "C" NOT NULL,
    hash TEXT COLLATE "C" NOT NULL,
    payload_z BYTEA,
    PRIMARY KEY (run_id, seq)
);
CREATE INDEX events_by_kind ON events (kind, run_id);
CREATE TABLE artifacts (
    hash TEXT COLLATE "C" PRIMARY KEY,
    media_type TEXT COLLATE "C" NOT NULL,
    size BIGINT NOT NULL,
    body BYTEA NOT NULL,
    created_at TEXT COLLATE "C" NOT NULL
);
CREATE TABLE envelope_versions (
    id TEXT COLLATE "C" NOT NULL,
    version BIGINT NOT NULL,
    content_hash TEXT COLLATE "C" NOT NULL,
    artifact TEXT COLLATE "C" NOT NULL REFERENCES artifacts (hash),
    created_at TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (id, content_hash)
);
CREATE TABLE promoted_records (
    id TEXT COLLATE "C" PRIMARY KEY,
    kind TEXT COLLATE "C" NOT NULL,
    body TEXT COLLATE "C" NOT NULL,
    source_run TEXT COLLATE "C" NOT NULL REFERENCES runs (id),
    source_step BIGINT NOT NULL,
    source_event BIGINT NOT NULL,
    scope TEXT COLLATE "C" NOT NULL CHECK (scope <> ''),
    ttl_seconds BIGINT NOT NULL CHECK (ttl_seconds >= 0),
    sensitivity TEXT COLLATE "C" NOT NULL
        CHECK (sensitivity IN ('public', 'internal', 'confidential', 'secret')),
    created_at TEXT COLLATE "C" NOT NULL
);
CREATE TABLE provenance_edges (
    parent TEXT COLLATE "C" NOT NULL,
    child TEXT COLLATE "C" NOT NULL,
    relation TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (parent, child, relation)
);
CREATE INDEX provenance_by_child ON provenance_edges (child);
CREATE TABLE jobs (
    id BIGINT PRIMARY KEY,
    kind TEXT COLLATE "C" NOT NULL,
    payload TEXT COLLATE "C" NOT NULL,
    state TEXT COLLATE "C" NOT NULL,
    attempts BIGINT NOT NULL,
    max_attempts BIGINT NOT NULL,
    run_after BIGINT NOT NULL,
    dedupe_key TEXT COLLATE "C",
    leased_by TEXT COLLATE "C",
    leased_until BIGINT,
    lease_ms BIGINT,
    progress_done BIGINT,
    progress_total BIGINT,
    progress_message TEXT COLLATE "C",
    progress_at BIGINT,
    result TEXT COLLATE "C",
    last_error TEXT COLLATE "C",
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    finished_at BIGINT
);
CREATE INDEX jobs_ready ON jobs (state, run_after);
CREATE INDEX jobs_by_dedupe_key ON jobs (kind, dedupe_key);
CREATE TABLE job_attempts (
    job_id BIGINT NOT NULL REFERENCES jobs (id),
    attempt BIGINT NOT NULL,
    worker TEXT COLLATE "C" NOT NULL,
    leased_at BIGINT NOT NULL,
    ended_at BIGINT,
    outcome TEXT COLLATE "C" NOT NULL,
    error TEXT COLLATE "C",
    PRIMARY KEY (job_id, attempt)
);
CREATE TABLE approvals (
    id TEXT COLLATE "C" PRIMARY KEY,
    run_id TEXT COLLATE "C" NOT NULL REFERENCES runs (id),
    call_id TEXT COLLATE "C" NOT NULL,
    tool TEXT COLLATE "C" NOT NULL,
    arguments TEXT COLLATE "C" NOT NULL,
    -- blake3 of the canonical JSON of {run, tool, arguments}: the exact call approved.
    call_hash TEXT COLLATE "C" NOT NULL,
    -- `ID@VERSION` of the governing envelopes when it was requested, comma-separated.
    envelopes TEXT COLLATE "C" NOT NULL,
    -- The rules that required it, comma-separated, and who may approve (empty: anyone).
    rules TEXT COLLATE "C" NOT NULL,
    approvers TEXT COLLATE "C" NOT NULL,
    -- pending | approved | rejected | used | expired
    state TEXT COLLATE "C" NOT NULL,
    requested_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    decided_by TEXT COLLATE "C",
    reason TEXT COLLATE "C",
    decided_at BIGINT,
    used_at BIGINT
);
CREATE INDEX approvals_by_run ON approvals (run_id, state);
CREATE INDEX approvals_by_state ON approvals (state, requested_at);
CREATE TABLE run_envelopes (
    run_id TEXT COLLATE "C" NOT NULL REFERENCES runs (id),
    envelope_id TEXT COLLATE "C" NOT NULL,
    content_hash TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (run_id, envelope_id, content_hash)
);
CREATE INDEX runs_by_start ON runs (started_at, id);
CREATE INDEX runs_by_agent ON runs (agent, started_at, id);
CREATE INDEX runs_by_status ON runs (status, started_at, id);
CREATE INDEX approvals_by_time ON approvals (requested_at, id);
CREATE TABLE memories (
    id TEXT COLLATE "C" PRIMARY KEY,
    class TEXT COLLATE "C" NOT NULL
        CHECK (class IN ('fact', 'procedure', 'preference', 'warning', 'summary')),
    text TEXT COLLATE "C" NOT NULL,
    norm TEXT COLLATE "C" NOT NULL,
    scope TEXT COLLATE "C" NOT NULL CHECK (scope <> ''),
    sensitivity TEXT COLLATE "C" NOT NULL
        CHECK (sensitivity IN ('public', 'internal', 'confidential', 'secret')),
    status TEXT COLLATE "C" NOT NULL
        CHECK (status IN ('candidate', 'approved', 'rejected', 'quarantined', 'expired')),
    pinned BIGINT NOT NULL DEFAULT 0,
    ttl_seconds BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    strength BIGINT NOT NULL DEFAULT 1,
    usage_count BIGINT NOT NULL DEFAULT 0,
    -- The score by parts (canonical JSON), as last distilled.
    score TEXT COLLATE "C" NOT NULL,
    extractor TEXT COLLATE "C" NOT NULL,
    created_at TEXT COLLATE "C" NOT NULL,
    updated_at TEXT COLLATE "C" NOT NULL,
    group_id BIGINT,
    fts_rowid BIGINT,
    helpful BIGINT NOT NULL DEFAULT 0,
    unhelpful BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX memories_by_status ON memories (status, class, scope);
CREATE INDEX memories_by_class_scope ON memories (class, scope);
CREATE TABLE memory_sources (
    memory_id TEXT COLLATE "C" NOT NULL REFERENCES memories (id),
    run_id TEXT COLLATE "C" NOT NULL REFERENCES runs (id),
    step BIGINT NOT NULL,
    event BIGINT NOT NULL,
    episode BIGINT NOT NULL,
    quote TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (memory_id, run_id, event)
);
CREATE INDEX memory_sources_by_run ON memory_sources (run_id);
CREATE TABLE memory_decisions (
    memory_id TEXT COLLATE "C" NOT NULL,
    seq BIGINT NOT NULL,
    decision TEXT COLLATE "C" NOT NULL
        CHECK (decision IN ('accept', 'reject', 'merge', 'expire', 'quarantine')),
    decided_by TEXT COLLATE "C" NOT NULL,
    reason TEXT COLLATE "C" NOT NULL,
    at TEXT COLLATE "C" NOT NULL,
    merged_into TEXT COLLATE "C",
    PRIMARY KEY (memory_id, seq)
);
CREATE TABLE memory_links (
    memory_id TEXT COLLATE "C" NOT NULL REFERENCES memories (id),
    run_id TEXT COLLATE "C" NOT NULL REFERENCES runs (id),
    compile_seq BIGINT NOT NULL,
    reason TEXT COLLATE "C" NOT NULL,
    at TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (memory_id, run_id, compile_seq)
);
CREATE INDEX memory_links_by_run ON memory_links (run_id, compile_seq);
CREATE TABLE memory_groups (
    id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    class TEXT COLLATE "C" NOT NULL,
    scope TEXT COLLATE "C" NOT NULL,
    sensitivity TEXT COLLATE "C" NOT NULL,
    status TEXT COLLATE "C" NOT NULL,
    pinned BIGINT NOT NULL,
    expiring BIGINT NOT NULL,
    members BIGINT NOT NULL DEFAULT 0,
    UNIQUE (class, scope, sensitivity, status, pinned, expiring)
);
CREATE INDEX memory_groups_by_scope ON memory_groups (scope);
CREATE TABLE memory_census (
    id BIGINT PRIMARY KEY CHECK (id = 1),
    members BIGINT NOT NULL
);
CREATE TABLE memory_words (
    word TEXT COLLATE "C" PRIMARY KEY,
    documents BIGINT NOT NULL
);
CREATE INDEX memories_by_status_id ON memories (status, id);
CREATE TABLE memory_edits (
    memory_id TEXT COLLATE "C" NOT NULL,
    seq BIGINT NOT NULL,
    field TEXT COLLATE "C" NOT NULL CHECK (field IN ('sensitivity')),
    old_value TEXT COLLATE "C" NOT NULL,
    new_value TEXT COLLATE "C" NOT NULL,
    edited_by TEXT COLLATE "C" NOT NULL,
    reason TEXT COLLATE "C" NOT NULL,
    at TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (memory_id, seq)
);
CREATE TABLE memory_feedback (
    memory_id TEXT COLLATE "C" NOT NULL,
    seq BIGINT NOT NULL,
    verdict TEXT COLLATE "C" NOT NULL CHECK (verdict IN ('helpful', 'unhelpful', 'wrong')),
    given_by TEXT COLLATE "C" NOT NULL,
    note TEXT COLLATE "C" NOT NULL,
    run_id TEXT COLLATE "C",
    at TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (memory_id, seq)
);
CREATE INDEX memories_by_group ON memories (group_id, expires_at);
CREATE INDEX memories_by_group_rank ON memories (group_id, strength DESC, usage_count DESC, id);
CREATE UNIQUE INDEX memories_by_fts_rowid ON memories (fts_rowid);
CREATE TABLE replay_scenarios (
    id TEXT COLLATE "C" PRIMARY KEY,              -- scn- and a hash of the canonical spec
    run_id TEXT COLLATE "C" NOT NULL REFERENCES runs(id),
    step BIGINT,
    name TEXT COLLATE "C",
    spec TEXT COLLATE "C" NOT NULL,               -- canonical JSON of the ScenarioSpec
    created_by TEXT COLLATE "C" NOT NULL,
    created_at TEXT COLLATE "C" NOT NULL
);
CREATE INDEX replay_scenarios_by_run ON replay_scenarios (run_id, created_at);
CREATE TABLE replay_batches (
    id TEXT COLLATE "C" PRIMARY KEY,              -- bat- and a sequence
    run_id TEXT COLLATE "C" NOT NULL REFERENCES runs(id),
    name TEXT COLLATE "C",
    spec TEXT COLLATE "C" NOT NULL,               -- canonical JSON of the BatchSpec
    scenarios TEXT COLLATE "C" NOT NULL,          -- JSON array of scenario ids, in order
    job_id BIGINT,
    created_by TEXT COLLATE "C" NOT NULL,
    created_at TEXT COLLATE "C" NOT NULL
);
CREATE TABLE replay_results (
    id TEXT COLLATE "C" PRIMARY KEY,              -- rpl- and a sequence
    scenario_id TEXT COLLATE "C" NOT NULL REFERENCES replay_scenarios(id),
    batch_id TEXT COLLATE "C" REFERENCES replay_batches(id),
    run_id TEXT COLLATE "C" NOT NULL REFERENCES runs(id),
    label TEXT COLLATE "C" NOT NULL,              -- win, loss, neutral
    first_change BIGINT,
    result TEXT COLLATE "C" NOT NULL,             -- JSON of the ReplayResult
    executed_at TEXT COLLATE "C" NOT NULL,
    seq BIGINT
);
CREATE INDEX replay_results_by_scenario ON replay_results (scenario_id);
CREATE INDEX replay_results_by_batch ON replay_results (batch_id);
CREATE INDEX replay_results_by_run ON replay_results (run_id);
CREATE TABLE regression_cases (
    id TEXT COLLATE "C" NOT NULL,
    version BIGINT NOT NULL,
    name TEXT COLLATE "C" NOT NULL,
    agent TEXT COLLATE "C" NOT NULL,
    task_type TEXT COLLATE "C" NOT NULL,
    run_id TEXT COLLATE "C" NOT NULL,             -- the run it was cut from (not a reference: cases outlive runs)
    bundle_hash TEXT COLLATE "C" NOT NULL REFERENCES artifacts(hash),
    reason TEXT COLLATE "C" NOT NULL,             -- why this version was made
    yaml TEXT COLLATE "C" NOT NULL,               -- the case file
    created_at TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (id, version)
);
CREATE TABLE regression_suites (
    id TEXT COLLATE "C" PRIMARY KEY,              -- sui- and a sequence
    selection TEXT COLLATE "C" NOT NULL,          -- JSON of what was asked to run
    job_id BIGINT,
    figures TEXT COLLATE "C",                     -- JSON, once finished
    signatures TEXT COLLATE "C",                  -- JSON, once finished
    created_at TEXT COLLATE "C" NOT NULL,
    finished_at TEXT COLLATE "C",
    seq BIGINT
);
CREATE TABLE regression_runs (
    id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,           -- rowid: increasing (rows are never deleted)
    case_id TEXT COLLATE "C" NOT NULL,
    version BIGINT NOT NULL,
    suite_id TEXT COLLATE "C" REFERENCES regression_suites(id),
    status TEXT COLLATE "C" NOT NULL,             -- passed, failed, flaky, error
    passes BIGINT NOT NULL,
    runs BIGINT NOT NULL,
    drift BIGINT NOT NULL,
    signature TEXT COLLATE "C",
    report TEXT COLLATE "C" NOT NULL,             -- JSON of the case's report
    executed_at TEXT COLLATE "C" NOT NULL
);
CREATE INDEX regression_runs_by_case ON regression_runs (case_id, id);
CREATE INDEX regression_runs_by_suite ON regression_runs (suite_id);
CREATE TABLE handoff_contracts (
    id TEXT COLLATE "C" NOT NULL,
    version BIGINT NOT NULL,
    content_hash TEXT COLLATE "C" NOT NULL,       -- blake3 of the contract's canonical JSON
    template TEXT COLLATE "C" NOT NULL,
    producer_run TEXT COLLATE "C" NOT NULL,
    producer_agent TEXT COLLATE "C" NOT NULL,
    consumer_run TEXT COLLATE "C" NOT NULL,       -- the producer's run, an open run, or handoff:ID until opened
    consumer_agent TEXT COLLATE "C" NOT NULL,
    state TEXT COLLATE "C" NOT NULL,              -- validated, rejected, accepted, refused,
                                      -- clarification_requested, fulfilled, violated
    contract TEXT COLLATE "C" NOT NULL,           -- canonical JSON of the contract
    validation TEXT COLLATE "C" NOT NULL,         -- JSON: problems, dropped, crossing, decision
    recorded_seq BIGINT,             -- its handoff event in the producer's run, when recorded
    created_by TEXT COLLATE "C" NOT NULL,
    created_at TEXT COLLATE "C" NOT NULL,
    updated_at TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (id, version)
);
CREATE INDEX handoff_contracts_by_producer ON handoff_contracts (producer_run);
CREATE INDEX handoff_contracts_by_consumer ON handoff_contracts (consumer_run);
CREATE TABLE handoff_acks (
    id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    contract_id TEXT COLLATE "C" NOT NULL,
    version BIGINT NOT NULL,
    response TEXT COLLATE "C" NOT NULL,           -- accept, reject, clarify
    consumer_run TEXT COLLATE "C",
    answered_by TEXT COLLATE "C" NOT NULL,
    reason TEXT COLLATE "C" NOT NULL,
    questions TEXT COLLATE "C" NOT NULL,          -- JSON array
    recorded_seq BIGINT,             -- its event in the consumer's run, when recorded
    at TEXT COLLATE "C" NOT NULL,
    FOREIGN KEY (contract_id, version) REFERENCES handoff_contracts (id, version)
);
CREATE INDEX handoff_acks_by_contract ON handoff_acks (contract_id, version);
CREATE TABLE handoff_deliveries (
    id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    contract_id TEXT COLLATE "C" NOT NULL,
    version BIGINT NOT NULL,
    consumer_run TEXT COLLATE "C" NOT NULL,
    state TEXT COLLATE "C" NOT NULL,              -- fulfilled or violated
    delivered TEXT COLLATE "C" NOT NULL,          -- JSON: outputs found (with the events showing them), actions
    decision TEXT COLLATE "C" NOT NULL,           -- JSON of the handoff pack's decision over the delivery
    at TEXT COLLATE "C" NOT NULL,
    FOREIGN KEY (contract_id, version) REFERENCES handoff_contracts (id, version)
);
CREATE INDEX handoff_deliveries_by_contract ON handoff_deliveries (contract_id, version);
CREATE TABLE handoff_violations (
    id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    delivery_id BIGINT NOT NULL REFERENCES handoff_deliveries (id),
    contract_id TEXT COLLATE "C" NOT NULL,
    version BIGINT NOT NULL,
    code TEXT COLLATE "C" NOT NULL,
    detail TEXT COLLATE "C" NOT NULL,
    rule TEXT COLLATE "C" NOT NULL,
    recorded_seq BIGINT,             -- the alert event in the consumer's run, when recorded
    at TEXT COLLATE "C" NOT NULL
);
CREATE INDEX handoff_violations_by_contract ON handoff_violations (contract_id, version);
CREATE TABLE case_events (
    case_id TEXT COLLATE "C" NOT NULL,
    version BIGINT NOT NULL,         -- 1, 2, 3... without gaps: the case's version after it
    event_id TEXT COLLATE "C" NOT NULL,           -- the appender's id: appending it again stores nothing
    kind TEXT COLLATE "C" NOT NULL,
    payload TEXT COLLATE "C" NOT NULL,            -- canonical JSON
    actor TEXT COLLATE "C" NOT NULL,
    at TEXT COLLATE "C" NOT NULL,                 -- RFC 3339
    prev_hash TEXT COLLATE "C" NOT NULL,
    hash TEXT COLLATE "C" NOT NULL,               -- blake3 over prev_hash, version, event id, kind, payload, actor, at
    PRIMARY KEY (case_id, version),
    UNIQUE (case_id, event_id)        -- generated ids are `CASE/VERSION`; callers' ids have no `/`
);
CREATE TABLE cases (
    case_id TEXT COLLATE "C" PRIMARY KEY,
    pack_id TEXT COLLATE "C" NOT NULL,
    engine_id TEXT COLLATE "C" NOT NULL,
    engine_version TEXT COLLATE "C" NOT NULL,
    pack_root TEXT COLLATE "C" NOT NULL,
    title TEXT COLLATE "C" NOT NULL,
    state TEXT COLLATE "C" NOT NULL,              -- open, awaiting_approval, committed, failed...
    version BIGINT NOT NULL,
    head_hash TEXT COLLATE "C" NOT NULL,
    opened_at TEXT COLLATE "C" NOT NULL,
    updated_at TEXT COLLATE "C" NOT NULL
);
CREATE INDEX cases_by_update ON cases (updated_at, case_id);
CREATE TABLE case_evidence (
    case_id TEXT COLLATE "C" NOT NULL,
    worker TEXT COLLATE "C" NOT NULL,
    key TEXT COLLATE "C" NOT NULL,
    value TEXT COLLATE "C" NOT NULL,              -- JSON
    source TEXT COLLATE "C" NOT NULL,             -- adapter (the worker's adapter ran) or api (a caller posted it)
    version BIGINT NOT NULL,         -- the event that recorded it
    PRIMARY KEY (case_id, worker, key)
);
CREATE TABLE case_proposals (
    case_id TEXT COLLATE "C" NOT NULL,
    proposal_id TEXT COLLATE "C" NOT NULL,
    capability TEXT COLLATE "C" NOT NULL,
    action TEXT COLLATE "C" NOT NULL,
    wording TEXT COLLATE "C" NOT NULL,
    input TEXT COLLATE "C" NOT NULL,              -- JSON
    state TEXT COLLATE "C" NOT NULL,
    version BIGINT NOT NULL,
    PRIMARY KEY (case_id, proposal_id)
);
CREATE TABLE case_previews (
    case_id TEXT COLLATE "C" NOT NULL,
    proposal_id TEXT COLLATE "C" NOT NULL,
    preview_hash TEXT COLLATE "C" NOT NULL,
    diff TEXT COLLATE "C" NOT NULL,               -- JSON array of changes
    summary TEXT COLLATE "C" NOT NULL,
    version BIGINT NOT NULL,
    PRIMARY KEY (case_id, proposal_id)
);
CREATE TABLE case_policy (
    case_id TEXT COLLATE "C" NOT NULL,
    proposal_id TEXT COLLATE "C" NOT NULL,
    preview_hash TEXT COLLATE "C" NOT NULL,
    effect TEXT COLLATE "C" NOT NULL,             -- allow, deny
    rules TEXT COLLATE "C" NOT NULL,              -- JSON array
    approval_id TEXT COLLATE "C",
    approval_state TEXT COLLATE "C",              -- pending, approved, rejected
    version BIGINT NOT NULL,
    PRIMARY KEY (case_id, proposal_id)
);
CREATE TABLE case_commits (
    case_id TEXT COLLATE "C" NOT NULL,
    proposal_id TEXT COLLATE "C" NOT NULL,
    state TEXT COLLATE "C" NOT NULL,              -- started, committed, failed, refused
    mode TEXT COLLATE "C" NOT NULL,
    detail TEXT COLLATE "C" NOT NULL,             -- JSON: receipt, verification, compensation, or why refused
    version BIGINT NOT NULL,
    PRIMARY KEY (case_id, proposal_id)
);
CREATE TABLE case_timeline (
    case_id TEXT COLLATE "C" NOT NULL,
    version BIGINT NOT NULL,
    kind TEXT COLLATE "C" NOT NULL,
    summary TEXT COLLATE "C" NOT NULL,
    actor TEXT COLLATE "C" NOT NULL,
    at TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (case_id, version)
);
CREATE TABLE memory_changes (
    seq BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    fts_rowid BIGINT NOT NULL
);
CREATE TABLE tokens (
    id TEXT COLLATE "C" PRIMARY KEY,
    kind TEXT COLLATE "C" NOT NULL,
    name TEXT COLLATE "C" NOT NULL,
    max_scope TEXT COLLATE "C",
    max_clearance TEXT COLLATE "C",
    secret_hash TEXT COLLATE "C" NOT NULL,
    created_at TEXT COLLATE "C" NOT NULL,
    created_by TEXT COLLATE "C" NOT NULL,
    expires_at BIGINT,
    revoked_at TEXT COLLATE "C",
    revoked_by TEXT COLLATE "C"
);
CREATE TABLE audit_log (
    seq BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    at TEXT COLLATE "C" NOT NULL,
    principal TEXT COLLATE "C" NOT NULL,
    kind TEXT COLLATE "C" NOT NULL,
    name TEXT COLLATE "C" NOT NULL,
    action TEXT COLLATE "C" NOT NULL,
    target TEXT COLLATE "C" NOT NULL,
    status BIGINT NOT NULL
);
CREATE TABLE tool_usage (
    seq BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    rule_id TEXT COLLATE "C" NOT NULL,
    per_kind TEXT COLLATE "C" NOT NULL,
    per_id TEXT COLLATE "C" NOT NULL,
    run_id TEXT COLLATE "C" NOT NULL,
    call_id TEXT COLLATE "C" NOT NULL,
    at BIGINT NOT NULL
);
CREATE INDEX tool_usage_window ON tool_usage (rule_id, per_kind, per_id, at);
CREATE TABLE run_pins (
    run_id TEXT COLLATE "C" NOT NULL REFERENCES runs (id),
    seq BIGINT NOT NULL,
    envelopes TEXT COLLATE "C" NOT NULL,
    pinned_by TEXT COLLATE "C" NOT NULL,
    pinned_at TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (run_id, seq)
);
CREATE TABLE mcp_tool_pins (
    server TEXT COLLATE "C" NOT NULL,
    tool TEXT COLLATE "C" NOT NULL,
    hash TEXT COLLATE "C" NOT NULL,
    definition TEXT COLLATE "C" NOT NULL,
    accepted_by TEXT COLLATE "C" NOT NULL,
    accepted_at TEXT COLLATE "C" NOT NULL,
    changed_hash TEXT COLLATE "C",
    changed_definition TEXT COLLATE "C",
    changed_at TEXT COLLATE "C",
    PRIMARY KEY (server, tool)
);
CREATE TABLE tollgate_counters (
    name TEXT COLLATE "C" PRIMARY KEY,            -- `jobs`, `regression_suites`, `replay_results`,
                                      -- `replay_results/SCENARIO`, `replay_batches/RUN`
    value BIGINT NOT NULL             -- the last number handed out
);
CREATE UNIQUE INDEX regression_suites_by_seq ON regression_suites (seq);
CREATE UNIQUE INDEX replay_results_by_seq ON replay_results (seq);

-- Memory search (SQLite: migrations 0009 and 0015). Each memory's terms, `s<hex of its
-- scope>w<word>` for each distinct word of its normalized text, are a tsvector searched through
-- a GIN index (SQLite: the contentless FTS5 table `memories_fts`). Trigger functions keep the
-- terms, the memory groups, the census, the word counts and the change log of ranking columns
-- in step, as SQLite's triggers do.
CREATE TABLE memories_fts (
    fts_rowid BIGINT PRIMARY KEY,
    terms TSVECTOR NOT NULL
);
CREATE INDEX memories_fts_terms ON memories_fts USING GIN (terms);
CREATE SEQUENCE memories_fts_rowid;
INSERT INTO memory_census (id, members) VALUES (1, 0);

-- The terms of a memory: one lexeme per distinct word, prefixed by its scope's token. Words
-- over 512 bytes are left out here and in `memory_words` (PostgreSQL refuses lexemes over 2 KB
-- and index keys over ~2.7 KB, and a run's text may hold any token); search never asks for
-- them on either engine (`memory::retrieve::LONGEST_WORD`).
CREATE FUNCTION tollgate_memory_terms(scope TEXT, norm TEXT) RETURNS TSVECTOR
LANGUAGE SQL IMMUTABLE AS $$
    SELECT COALESCE(array_to_tsvector(array_agg(DISTINCT
               's' || encode(convert_to(scope, 'UTF8'), 'hex') || 'w' || w)), ''::tsvector)
    FROM unnest(string_to_array(norm, ' ')) AS w
    WHERE w <> '' AND octet_length(w) <= 512
$$;

-- The group a memory belongs to, made when first needed.
CREATE FUNCTION tollgate_memory_group(m memories) RETURNS BIGINT
LANGUAGE plpgsql AS $$
DECLARE
    found BIGINT;
BEGIN
    INSERT INTO memory_groups (class, scope, sensitivity, status, pinned, expiring)
        VALUES (m.class, m.scope, m.sensitivity, m.status, m.pinned, (m.expires_at <> 0)::int)
        ON CONFLICT DO NOTHING;
    SELECT g.id INTO found FROM memory_groups g
    WHERE g.class = m.class AND g.scope = m.scope AND g.sensitivity = m.sensitivity
      AND g.status = m.status AND g.pinned = m.pinned AND g.expiring = (m.expires_at <> 0)::int;
    RETURN found;
END
$$;

CREATE FUNCTION tollgate_memories_indexing() RETURNS TRIGGER
LANGUAGE plpgsql AS $$
BEGIN
    NEW.fts_rowid := nextval('memories_fts_rowid');
    NEW.group_id := tollgate_memory_group(NEW);
    RETURN NEW;
END
$$;
CREATE TRIGGER memories_indexing BEFORE INSERT ON memories
FOR EACH ROW EXECUTE FUNCTION tollgate_memories_indexing();

CREATE FUNCTION tollgate_memories_indexed() RETURNS TRIGGER
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO memories_fts (fts_rowid, terms)
        VALUES (NEW.fts_rowid, tollgate_memory_terms(NEW.scope, NEW.norm));
    UPDATE memory_groups SET members = members + 1 WHERE id = NEW.group_id;
    UPDATE memory_census SET members = members + 1;
    INSERT INTO memory_changes (fts_rowid) VALUES (NEW.fts_rowid);
    INSERT INTO memory_words (word, documents)
        SELECT DISTINCT w, 1 FROM unnest(string_to_array(NEW.norm, ' ')) AS w WHERE w <> '' AND octet_length(w) <= 512
        ON CONFLICT (word) DO UPDATE SET documents = memory_words.documents + 1;
    RETURN NULL;
END
$$;
CREATE TRIGGER memories_indexed AFTER INSERT ON memories
FOR EACH ROW EXECUTE FUNCTION tollgate_memories_indexed();

-- A memory whose group-defining columns change moves to its new group (before the row is
-- written, so the change-log trigger below sees the new group).
CREATE FUNCTION tollgate_memories_regrouped() RETURNS TRIGGER
LANGUAGE plpgsql AS $$
BEGIN
    UPDATE memory_groups SET members = members - 1 WHERE id = OLD.group_id;
    NEW.group_id := tollgate_memory_group(NEW);
    UPDATE memory_groups SET members = members + 1 WHERE id = NEW.group_id;
    RETURN NEW;
END
$$;
CREATE TRIGGER memories_regrouped BEFORE UPDATE ON memories
FOR EACH ROW
WHEN (OLD.class <> NEW.class OR OLD.scope <> NEW.scope OR OLD.sensitivity <> NEW.sensitivity
      OR OLD.status <> NEW.status OR OLD.pinned <> NEW.pinned
      OR (OLD.expires_at <> 0) <> (NEW.expires_at <> 0))
EXECUTE FUNCTION tollgate_memories_regrouped();

CREATE FUNCTION tollgate_memories_reworded() RETURNS TRIGGER
LANGUAGE plpgsql AS $$
BEGIN
    UPDATE memory_words SET documents = documents - 1
    WHERE word IN (SELECT w FROM unnest(string_to_array(OLD.norm, ' ')) AS w);
    INSERT INTO memory_words (word, documents)
        SELECT DISTINCT w, 1 FROM unnest(string_to_array(NEW.norm, ' ')) AS w WHERE w <> '' AND octet_length(w) <= 512
        ON CONFLICT (word) DO UPDATE SET documents = memory_words.documents + 1;
    UPDATE memories_fts SET terms = tollgate_memory_terms(NEW.scope, NEW.norm)
    WHERE fts_rowid = OLD.fts_rowid;
    RETURN NULL;
END
$$;
CREATE TRIGGER memories_reworded AFTER UPDATE ON memories
FOR EACH ROW WHEN (OLD.norm <> NEW.norm OR OLD.scope <> NEW.scope)
EXECUTE FUNCTION tollgate_memories_reworded();

-- A change to a column memory ranking reads is logged for the ranking columns' readers; the
-- log keeps its last 100,000 changes.
CREATE FUNCTION tollgate_memories_reranked() RETURNS TRIGGER
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO memory_changes (fts_rowid) VALUES (NEW.fts_rowid);
    DELETE FROM memory_changes
    WHERE seq <= (SELECT MAX(seq) FROM memory_changes) - 100000;
    RETURN NULL;
END
$$;
CREATE TRIGGER memories_reranked AFTER UPDATE ON memories
FOR EACH ROW
WHEN (OLD.group_id IS DISTINCT FROM NEW.group_id OR OLD.expires_at <> NEW.expires_at
      OR OLD.norm <> NEW.norm OR OLD.class <> NEW.class OR OLD.strength <> NEW.strength
      OR OLD.usage_count <> NEW.usage_count OR OLD.helpful <> NEW.helpful
      OR OLD.unhelpful <> NEW.unhelpful OR OLD.score <> NEW.score
      OR OLD.fts_rowid IS DISTINCT FROM NEW.fts_rowid)
EXECUTE FUNCTION tollgate_memories_reranked();

CREATE FUNCTION tollgate_memories_unindexed() RETURNS TRIGGER
LANGUAGE plpgsql AS $$
BEGIN
    UPDATE memory_groups SET members = members - 1 WHERE id = OLD.group_id;
    UPDATE memory_census SET members = members - 1;
    UPDATE memory_words SET documents = documents - 1
    WHERE word IN (SELECT w FROM unnest(string_to_array(OLD.norm, ' ')) AS w);
    DELETE FROM memories_fts WHERE fts_rowid = OLD.fts_rowid;
    INSERT INTO memory_changes (fts_rowid) VALUES (OLD.fts_rowid);
    RETURN NULL;
END
$$;
CREATE TRIGGER memories_unindexed AFTER DELETE ON memories
FOR EACH ROW EXECUTE FUNCTION tollgate_memories_unindexed();
