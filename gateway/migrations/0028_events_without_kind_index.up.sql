-- `events_by_kind` (kind, run_id) served only migration 6's one-time count of decisions: no read
-- asks for a kind's events across runs (a run's events are read by its key, run and seq). It
-- cost every append a leaf of its own per kind of event: a recorded tool call (a `tool_call`
-- and a `decision` event) wrote two more pages to the log than its rows need.
DROP INDEX events_by_kind;
