//! libFuzzer entry point of the `cdf` target (see `sluice_fuzz::cdf`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sluice_fuzz::cdf::run(data));
