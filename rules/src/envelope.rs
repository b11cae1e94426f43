//! Policy envelopes: the YAML format, loading with validation, and compilation to facts.
