//! libFuzzer entry point of the `scenario` target (see `sluice_fuzz::scenario`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sluice_fuzz::scenario::run(data));
