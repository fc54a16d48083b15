//! libFuzzer entry point of the `topology` target (see `sluice_fuzz::topology`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sluice_fuzz::topology::run(data));
