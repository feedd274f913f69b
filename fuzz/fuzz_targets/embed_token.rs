//! The `embed_token` target: fuzz_checks::embed_token says what must hold.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzz_checks::embed_token::check(data));
