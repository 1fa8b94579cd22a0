#![no_main]
//! Fuzz target `calibration`: the contract is `gpuplan_fuzzcheck::calibration`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| gpuplan_fuzzcheck::calibration(data));
