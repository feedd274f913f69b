//! The `sse_provider` target: fuzz_checks::sse_provider says what must hold.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzz_checks::sse_provider::check(data));
