//! libFuzzer entry point of the `udp` target (see `sluice_fuzz::udp`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sluice_fuzz::udp::run(data));
