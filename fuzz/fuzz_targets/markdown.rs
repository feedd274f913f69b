//! The `markdown` target: fuzz_checks::markdown says what must hold.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzz_checks::markdown::check(data));
