//! Pack test files (YAML) and their runner.
