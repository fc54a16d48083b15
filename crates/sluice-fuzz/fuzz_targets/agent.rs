//! libFuzzer entry point of the `agent` target (see `sluice_fuzz::agent`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sluice_fuzz::agent::run(data));
