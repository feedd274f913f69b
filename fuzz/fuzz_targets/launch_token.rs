//! The `launch_token` target: fuzz_checks::launch_token says what must hold.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzz_checks::launch_token::check(data));
