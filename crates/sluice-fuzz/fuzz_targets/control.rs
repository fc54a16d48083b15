//! libFuzzer entry point of the `control` target (see `sluice_fuzz::control`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sluice_fuzz::control::run(data));
