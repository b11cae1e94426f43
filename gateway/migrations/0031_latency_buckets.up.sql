-- How long the gateway took, per five minutes (issue 42), for the dashboard overview's latency
-- plot: a tool call from its arrival in the runtime to its decision (the write excluded), and
-- a chat call's round trip to the model, by the run's agent (not its task: tasks are many), as
-- a histogram of microseconds (`slot`: the values under 16 one slot each, then eight slots per
-- power of two, so a percentile read from it is within 6.25 %). Written by the write that records the
-- decision or the answer; timings are not part of the record, so `tollgate db recount` keeps
-- them as they are.

CREATE TABLE latency_buckets (
    -- The five minutes' start, in seconds since the epoch (a multiple of 300).
    bucket INTEGER NOT NULL,
    agent TEXT NOT NULL,
    -- `tool_call` or `chat`.
    kind TEXT NOT NULL,
    slot INTEGER NOT NULL,
    n INTEGER NOT NULL,
    PRIMARY KEY (bucket, agent, kind, slot)
);

-- The overview counts the memories compiles used in its window, by class: memory links by time.
CREATE INDEX memory_links_by_time ON memory_links (at, memory_id);
