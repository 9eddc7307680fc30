//! End-to-end tests live in tests/tests/*.rs; helpers here.
