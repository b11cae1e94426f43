-- Back to one version per envelope and run. Where a run used several versions of one envelope,
-- the lowest (the one in force when it opened) is kept; the later ones' links are lost (the
-- versions themselves stay in `envelope_versions`, and the decisions still name them).

CREATE TABLE run_envelopes_0004 (
    run_id TEXT NOT NULL,
    envelope_id TEXT NOT NULL,
    content_hash TEXT NOT NULL
);
INSERT INTO run_envelopes_0004 (run_id, envelope_id, content_hash)
    SELECT r.run_id, r.envelope_id, r.content_hash FROM run_envelopes r
    WHERE NOT EXISTS (
        SELECT 1 FROM run_envelopes o
        JOIN envelope_versions ov ON ov.id = o.envelope_id AND ov.content_hash = o.content_hash
        JOIN envelope_versions rv ON rv.id = r.envelope_id AND rv.content_hash = r.content_hash
        WHERE o.run_id = r.run_id AND o.envelope_id = r.envelope_id AND ov.version < rv.version
    );
DROP TABLE run_envelopes;

CREATE TABLE run_envelopes (
    run_id TEXT NOT NULL REFERENCES runs (id),
    envelope_id TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    PRIMARY KEY (run_id, envelope_id)
);
INSERT INTO run_envelopes (run_id, envelope_id, content_hash)
    SELECT run_id, envelope_id, content_hash FROM run_envelopes_0004;
DROP TABLE run_envelopes_0004;
