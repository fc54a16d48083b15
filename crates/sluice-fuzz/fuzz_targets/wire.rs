//! libFuzzer entry point of the `wire` target (see `sluice_fuzz::wire`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sluice_fuzz::wire::run(data));
