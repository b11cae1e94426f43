//! Tollgate's policy vocabulary and built-in rule packs.
//!
//! This crate holds the relation declarations of the policy domain and the built-in packs
//! (`*.dl`) with their tests. It is filled in by the policy-core work; for now it only
//! re-exports the engine it builds on.
#![warn(missing_docs)]

pub use tollgate_engine as engine;
