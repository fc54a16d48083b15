//! libFuzzer entry point of the `codec` target (see `sluice_fuzz::codec`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sluice_fuzz::codec::run(data));
