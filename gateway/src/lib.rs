//! Tollgate's application library. The store, recorder, context compiler, providers, policy
//! enforcement and HTTP API arrive with their issues; today it exposes the rule layer.

pub use tollgate_rules as rules;
