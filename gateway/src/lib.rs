//! Tollgate's application library: the store and flight recorder, the provenance graph, the
//! context compiler, provider adapters, exact replay, the job runner, the evaluators, the
//! agent runtime (runs, compiles, tool calls with approvals and rate limits, the model proxy),
//! the memory distiller, counterfactual replay, auto-regression, handoff contracts and the HTTP
//! gateway over it. The command line (`cli/`) is a thin front.
//!
//! Dependency direction: `gateway → rules → engine`. Nothing here is called by the engine.

pub mod approvals;
pub mod auth;
pub mod cases;
pub mod clock;
pub mod codes;
pub mod compiler;
pub mod cover;
pub mod evaluators;
pub mod handoff;
pub mod http;
pub mod job_kinds;
pub mod jobs;
pub mod mcp;
pub mod memory;
pub mod overview;
pub mod packs;
pub mod policy;
pub mod provenance;
pub mod providers;
pub mod ratelimit;
pub mod receipts;
pub mod recorder;
pub mod regress;
pub mod replay;
pub mod run_policy;
pub mod runtime;
pub mod schemas;
pub mod secrets;
pub mod simulate;
pub mod store;

pub use tollgate_rules as rules;
