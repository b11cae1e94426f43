//! Tollgate's application library: the store and flight recorder, the provenance graph, the
//! context compiler, provider adapters, exact replay, the job runner and the evaluators. The
//! command line (`cli/`) and, later, the HTTP gateway are thin fronts over it.
//!
//! Dependency direction: `gateway → rules → engine`. Nothing here is called by the engine.

pub mod compiler;
pub mod evaluators;
pub mod http;
pub mod jobs;
pub mod policy;
pub mod provenance;
pub mod providers;
pub mod recorder;
pub mod replay;
pub mod runtime;
pub mod store;

pub use tollgate_rules as rules;
