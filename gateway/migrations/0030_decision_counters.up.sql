-- Decisions counted as they are recorded (issue 42), for the dashboard's overview, so it reads
-- counters instead of events: by effect per five minutes (`decision_buckets`, by the run's
-- agent; `decision_task_buckets`, by its task too), and the decisions not allowed by tool and
-- deciding rules (a JSON array) per hour (`decision_reasons`, `decision_task_reasons`). The
-- task is kept apart, first in its tables' keys: tasks are many (a ticket a run), and a view
-- of every task would read a row per run. The recorder adds to them in the write that records
-- the decisions (an append, an import), from the same count as the run's own `decisions_*`
-- columns (migration 6), so the overview's sums equal the runs'. A decision whose event time
-- is not RFC 3339 is counted on its run only. `tollgate db recount` rebuilds the tables from
-- the events (decisions recorded before this version are counted by it).

CREATE TABLE decision_buckets (
    -- The five minutes' start, in seconds since the epoch (a multiple of 300).
    bucket INTEGER NOT NULL,
    agent TEXT NOT NULL,
    effect TEXT NOT NULL,
    n INTEGER NOT NULL,
    PRIMARY KEY (bucket, agent, effect)
);
CREATE TABLE decision_task_buckets (
    task TEXT NOT NULL,
    bucket INTEGER NOT NULL,
    agent TEXT NOT NULL,
    effect TEXT NOT NULL,
    n INTEGER NOT NULL,
    PRIMARY KEY (task, bucket, agent, effect)
);
CREATE TABLE decision_reasons (
    -- The hour's start, in seconds since the epoch.
    hour INTEGER NOT NULL,
    agent TEXT NOT NULL,
    effect TEXT NOT NULL,
    -- The tool of a tool call, '' otherwise.
    tool TEXT NOT NULL,
    rules TEXT NOT NULL,
    n INTEGER NOT NULL,
    PRIMARY KEY (hour, agent, effect, tool, rules)
);
CREATE TABLE decision_task_reasons (
    task TEXT NOT NULL,
    hour INTEGER NOT NULL,
    agent TEXT NOT NULL,
    effect TEXT NOT NULL,
    tool TEXT NOT NULL,
    rules TEXT NOT NULL,
    n INTEGER NOT NULL,
    PRIMARY KEY (task, hour, agent, effect, tool, rules)
);
