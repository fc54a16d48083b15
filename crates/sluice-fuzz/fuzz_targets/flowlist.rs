//! libFuzzer entry point of the `flowlist` target (see `sluice_fuzz::flowlist`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sluice_fuzz::flowlist::run(data));
