//! libFuzzer entry point of the `program` target (see `sluice_fuzz::program`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sluice_fuzz::program::run(data));
