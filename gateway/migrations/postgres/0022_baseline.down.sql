-- Reverts the baseline: an empty database (PostgreSQL's schema begins at version 22).
-- (dropping `memories` drops tollgate_memory_group, which takes its row type)
DROP TABLE memories_fts, tollgate_counters, mcp_tool_pins, run_pins, tool_usage, audit_log,
    tokens, memory_changes, case_timeline, case_commits, case_policy, case_previews,
    case_proposals, case_evidence, cases, case_events, handoff_violations, handoff_deliveries,
    handoff_acks, handoff_contracts, regression_runs, regression_suites, regression_cases,
    replay_results, replay_batches, replay_scenarios, memory_feedback, memory_edits,
    memory_words, memory_census, memory_groups, memory_links, memory_decisions, memory_sources,
    memories, run_envelopes, approvals, job_attempts, jobs, provenance_edges, promoted_records,
    envelope_versions, artifacts, events, steps, runs CASCADE;
DROP FUNCTION tollgate_memories_indexing, tollgate_memories_indexed, tollgate_memories_regrouped,
    tollgate_memories_reworded, tollgate_memories_reranked, tollgate_memories_unindexed,
    tollgate_memory_terms;
DROP SEQUENCE memories_fts_rowid;
