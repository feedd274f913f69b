//! The `component` target: fuzz_checks::component says what must hold.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzz_checks::component::check(data));
