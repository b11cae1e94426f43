//! The built-in rule packs.
