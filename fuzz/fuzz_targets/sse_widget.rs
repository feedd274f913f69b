//! The `sse_widget` target: fuzz_checks::sse_widget says what must hold.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzz_checks::sse_widget::check(data));
