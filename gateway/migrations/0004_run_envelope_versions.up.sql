-- A run links every envelope version any of its decisions used, not only those in force when
-- it opened: an envelope updated while a run is running governs the run's later decisions, and
-- replay and simulation rebuild each decision's policy from these links. So one envelope may
-- now be linked to a run in several versions: the key takes the content hash.
-- Portable SQL: the table is rebuilt by copy (no ALTER of a primary key).

CREATE TABLE run_envelopes_0004 (
    run_id TEXT NOT NULL,
    envelope_id TEXT NOT NULL,
    content_hash TEXT NOT NULL
);
INSERT INTO run_envelopes_0004 (run_id, envelope_id, content_hash)
    SELECT run_id, envelope_id, content_hash FROM run_envelopes;
DROP TABLE run_envelopes;

CREATE TABLE run_envelopes (
    run_id TEXT NOT NULL REFERENCES runs (id),
    envelope_id TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    PRIMARY KEY (run_id, envelope_id, content_hash)
);
INSERT INTO run_envelopes (run_id, envelope_id, content_hash)
    SELECT run_id, envelope_id, content_hash FROM run_envelopes_0004;
DROP TABLE run_envelopes_0004;
