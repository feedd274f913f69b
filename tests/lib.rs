//! Integration tests live in tests/api; this crate has no library code.
