//! The `display_cards` target: fuzz_checks::display_cards says what must hold.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzz_checks::display_cards::check(data));
