-- Decisions counted per five minutes as they are recorded (issue 42), for the dashboard's
-- overview: by the run's agent and task, what was decided (`tool`, `context`, `model`,
-- `memory`, `handoff`), the effect answered, the tool of a tool call ('' otherwise) and the
-- deciding rules (a JSON array, as decided). The recorder adds to them in the write that
-- records the decisions (an append, an import), from the same count as the run's own
-- `decisions_*` columns (migration 6), so the overview reads counters instead of events and
-- its sums equal the runs'. A decision whose event time is not RFC 3339 is counted on its run
-- only. `tollgate db recount` rebuilds the table from the events (decisions recorded before
-- this version are counted by it).

CREATE TABLE decision_buckets (
    -- The five minutes' start, in seconds since the epoch (a multiple of 300).
    bucket INTEGER NOT NULL,
    agent TEXT NOT NULL,
    task TEXT NOT NULL,
    kind TEXT NOT NULL,
    effect TEXT NOT NULL,
    tool TEXT NOT NULL,
    rules TEXT NOT NULL,
    n INTEGER NOT NULL,
    PRIMARY KEY (bucket, agent, task, kind, effect, tool, rules)
);
