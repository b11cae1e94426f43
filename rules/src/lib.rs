//! Tollgate's policy layer over the Datalog engine: the vocabulary (relation declarations) and
//! the built-in rule packs, pack test files and their runner, and policy envelopes (a YAML
//! format compiled to facts), the request and subject encoders, and canonical JSON.
#![warn(missing_docs)]

pub mod canonical;
pub mod decide;
pub mod envelope;
pub mod located;
pub mod pack_test;
pub mod packs;
pub mod request;

pub use tollgate_engine as engine;
