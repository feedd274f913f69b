//! The `pdf` target: fuzz_checks::pdf says what must hold.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzz_checks::pdf::check(data));
